"""Each head's pattern scores in a sortable table: which head looks back, which parks on [SEP].

Filled from plain dicts (``core/trained/patterns.head_scores``); a click on a row
emits ``head_selected(head)``. Numbers are stored as numbers, so sorting by a
column orders the heads by that score, not by its text.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QWidget

from mha_explorer.qt.trained.number_item import NumberItem

COLUMNS = (("head", "head"), ("previous_token", "previous"), ("next_token", "next"), ("self", "self"),
           ("first_token", "first ([CLS])"), ("sep", "[SEP]"), ("broad", "broad"))
TIPS = {
    "previous_token": "mean weight on the token just before",
    "next_token": "mean weight on the token just after",
    "self": "mean weight on the token itself",
    "first_token": "mean weight on the first token ([CLS]): a sink where a head rests",
    "sep": "mean weight on [SEP] tokens: another sink",
    "broad": "entropy / log2 S: 0 looks at one key, 1 spreads evenly",
}
DECIMALS = 2


class PatternsTable(QTableWidget):
    """``set_scores(layer 1-based, heads: list of {pattern: score}, one per head, 0-based)``;
    signal ``head_selected(head)``; ``sort_by(pattern)`` orders the heads, highest first."""

    head_selected = Signal(int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(0, len(COLUMNS), parent)
        self.setHorizontalHeaderLabels([label for _key, label in COLUMNS])
        for col, (key, _label) in enumerate(COLUMNS):
            if key in TIPS:
                self.horizontalHeaderItem(col).setToolTip(TIPS[key])
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.horizontalHeader().setSortIndicator(0, Qt.SortOrder.AscendingOrder)  # by head at first
        self.setSortingEnabled(True)
        self.setAccessibleName("Head pattern scores")
        self.layer: int | None = None
        self.itemSelectionChanged.connect(self._emit_selected)

    def set_scores(self, layer: int, heads: list[dict[str, float]]) -> None:
        self.layer = layer
        sorting = self.isSortingEnabled()
        self.setSortingEnabled(False)  # rows keep their places while they are filled
        self.setRowCount(len(heads))
        for row, scores in enumerate(heads):
            self.setItem(row, 0, NumberItem(row))
            for col, (key, _label) in enumerate(COLUMNS[1:], start=1):
                self.setItem(row, col, NumberItem(scores[key], DECIMALS))
        self.setSortingEnabled(sorting)

    def sort_by(self, pattern: str, descending: bool = True) -> None:
        col = [key for key, _label in COLUMNS].index(pattern)
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
