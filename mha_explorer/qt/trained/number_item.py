"""A table cell that shows a number with fixed decimals and sorts by its value."""

from __future__ import annotations

import math

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTableWidgetItem

MISSING = "–"


class NumberItem(QTableWidgetItem):
    """``NumberItem(0.98, 2)`` shows "0.98"; ``NumberItem(3)`` shows "3"; None shows "–" and
    sorts after every number (in ascending order)."""

    def __init__(self, value: float | None, decimals: int | None = None):
        self.value = math.inf if value is None else float(value)
        if value is None:
            text = MISSING
        else:
            text = f"{float(value):.{decimals}f}" if decimals is not None else str(int(value))
        super().__init__(text)
        self.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        if isinstance(other, NumberItem):
            return self.value < other.value
        return super().__lt__(other)
