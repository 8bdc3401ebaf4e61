"""One way to let a panel's content scroll instead of squeezing the docks beside it."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QVBoxLayout, QWidget

from mha_explorer.qt.whole_rows import WholeRowsArea


def scroll_area(content: QWidget | None = None, *, sideways: bool = False,
                parent: QWidget | None = None, fill: QWidget | None = None) -> QScrollArea:
    """A frameless area that scrolls vertically and fits the width (``sideways``: it
    may scroll horizontally too), showing whole rows only (qt/whole_rows.py); ``content``
    is resized with it. ``fill``: a panel the area fills, edge to edge (given a layout for it)."""
    area = WholeRowsArea(parent)
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded if sideways
                                      else Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    if content is not None:
        area.setWidget(content)
    if fill is not None:
        outer = QVBoxLayout(fill)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(area)
    return area
