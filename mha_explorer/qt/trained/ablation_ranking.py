"""Which heads matter: each head of a layer switched off in turn, ranked by how much the
sentence embedding moved (cosine to the unablated one; lower is a bigger change).

Filled from plain dicts, e.g. ``[{"head": 4, "embedding_cosine": 0.9945,
"layer_output_cosine": 0.97}, ...]`` (``core/trained/ablation.ablate_each_head``
turned into dicts); a click on a row emits ``head_selected(head)``.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QWidget

from mha_explorer.qt.trained.number_item import NumberItem
from mha_explorer.qt.whole_rows import WholeCells

COLUMNS = ("rank", "head", "embedding cosine", "layer output cosine")
DECIMALS = 4  # cosines of ablated heads differ in the third or fourth place


class AblationRanking(WholeCells, QTableWidget):
    """``set_ranking(layer 1-based, rows)`` shows the heads most consequential first;
    signal ``head_selected(head)``; columns sort on click."""

    head_selected = Signal(int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(0, len(COLUMNS), parent)
        self.whole_cells()  # a column or row at the edge is shown whole or not at all
        self.setHorizontalHeaderLabels(list(COLUMNS))
        self.horizontalHeaderItem(2).setToolTip("cosine of the final sentence embedding (mean pooling, "
                                                "unit length) to the one with every head on")
        self.horizontalHeaderItem(3).setToolTip("mean over tokens of the cosine of this layer's output "
                                                "to the one with every head on")
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.setSortingEnabled(True)
        self.setAccessibleName("Heads ranked by the effect of switching them off")
        self.layer: int | None = None
        self.itemSelectionChanged.connect(self._emit_selected)

    def set_ranking(self, layer: int, rows: list[dict]) -> None:
        self.layer = layer
        ranked = sorted(rows, key=lambda r: (r["embedding_cosine"], r["head"]))
        self.setSortingEnabled(False)
        self.setRowCount(len(ranked))
        for i, row in enumerate(ranked):
            self.setItem(i, 0, NumberItem(i + 1))
            self.setItem(i, 1, NumberItem(row["head"]))
            self.setItem(i, 2, NumberItem(row["embedding_cosine"], DECIMALS))
            cos = row.get("layer_output_cosine")
            self.setItem(i, 3, NumberItem(cos, DECIMALS) if cos is not None else NumberItem(None))
        self.horizontalHeader().setSortIndicator(0, Qt.SortOrder.AscendingOrder)  # by rank
        self.setSortingEnabled(True)  # sorts by the indicator

    def clear_ranking(self) -> None:
        """No rows: the ranking shown was another layer's, text's or model's."""
        self.layer = None
        self.setRowCount(0)

    def heads_in_order(self) -> list[int]:
        return [int(self.item(r, 1).value) for r in range(self.rowCount())]

    def _emit_selected(self) -> None:
        rows = {index.row() for index in self.selectedIndexes()}
        if len(rows) == 1:
            self.head_selected.emit(int(self.item(rows.pop(), 1).value))
