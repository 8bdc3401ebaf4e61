"""One way to let a panel's content scroll instead of squeezing the docks beside it."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget


def scroll_area(content: QWidget | None = None, *, sideways: bool = False,
                parent: QWidget | None = None) -> QScrollArea:
    """A frameless area that scrolls vertically and fits the width (``sideways``: it
    may scroll horizontally too); ``content`` is resized with it."""
    area = QScrollArea(parent)
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded if sideways
                                      else Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    if content is not None:
        area.setWidget(content)
    return area
