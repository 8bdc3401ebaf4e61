"""Each head's pattern scores in a sortable table: which head looks back, which rests on a sink.

The columns are the model's own (``core/display/pattern_columns``, from its description:
an encoder's [CLS] and [SEP], a decoder's <bos> and induction), set with ``set_columns`` when
the model changes; filled from plain dicts, one per head. A click on a row emits
``head_selected(head)``. Numbers are stored as numbers, so sorting by a column orders the heads
by that score, not by its text; a score a head does not have (induction where nothing repeats)
reads "–".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QWidget

from mha_explorer.qt.trained.number_item import NumberItem
from mha_explorer.qt.whole_rows import WholeCells

if TYPE_CHECKING:
    from mha_explorer.core.display.pattern_columns import PatternColumn

DECIMALS = 2


class PatternsTable(WholeCells, QTableWidget):
    """``set_columns(columns)`` for the model shown; ``set_scores(layer 1-based, heads: list of
    {pattern: score}, one per head, 0-based)``; ``clear_scores()``; signal ``head_selected(head)``;
    ``sort_by(pattern)`` orders the heads, highest first."""

    head_selected = Signal(int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(0, 1, parent)
        self.whole_cells()  # a column or row at the edge is shown whole or not at all
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.setAccessibleName("Head pattern scores")
        self.layer: int | None = None
        self.columns: tuple[PatternColumn, ...] = ()
        self.set_columns(())
        self.itemSelectionChanged.connect(self._emit_selected)

    @property
    def keys(self) -> tuple[str, ...]:
        """The scores shown, after the head's number."""
        return tuple(c.key for c in self.columns)

    def set_columns(self, columns: Sequence[PatternColumn]) -> None:
        """The model's scores as the columns after "head"; the rows are cleared."""
        self.clear_scores()
        self.columns = tuple(columns)
        self.setColumnCount(1 + len(self.columns))
        self.setHorizontalHeaderLabels(["head", *(c.label for c in self.columns)])
        for col, column in enumerate(self.columns, start=1):
            self.horizontalHeaderItem(col).setToolTip(column.tip)
        self.horizontalHeader().setSortIndicator(0, Qt.SortOrder.AscendingOrder)  # by head at first
        self.setSortingEnabled(True)

    def clear_scores(self) -> None:
        """No rows: the scores shown belonged to another model, text or layer."""
        self.layer = None
        self.setRowCount(0)

    def set_scores(self, layer: int, heads: list[dict[str, float | None]]) -> None:
        self.layer = layer
        sorting = self.isSortingEnabled()
        self.setSortingEnabled(False)  # rows keep their places while they are filled
        self.setRowCount(len(heads))
        for row, scores in enumerate(heads):
            self.setItem(row, 0, NumberItem(row))
            for col, key in enumerate(self.keys, start=1):
                self.setItem(row, col, NumberItem(scores.get(key), DECIMALS))
        self.setSortingEnabled(sorting)

    def sort_by(self, pattern: str, descending: bool = True) -> None:
        col = ("head", *self.keys).index(pattern)
        order = Qt.SortOrder.DescendingOrder if descending else Qt.SortOrder.AscendingOrder
        self.sortItems(col, order)
        self.horizontalHeader().setSortIndicator(col, order)

    def heads_in_order(self) -> list[int]:
        """Head numbers from top to bottom as the table now shows them."""
        return [int(self.item(row, 0).value) for row in range(self.rowCount())]

    def _emit_selected(self) -> None:
        rows = {index.row() for index in self.selectedIndexes()}
        if len(rows) == 1:
            self.head_selected.emit(int(self.item(rows.pop(), 0).value))
