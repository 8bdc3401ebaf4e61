"""Draggable splits between the Lab's plots."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QWidget


def split(orientation: Qt.Orientation, *widgets: QWidget) -> QSplitter:
    """Panels side by side or one over the other, each border draggable, none collapsing
    to nothing (a collapsed plot looks like a missing one)."""
    splitter = QSplitter(orientation)
    splitter.setChildrenCollapsible(False)
    for widget in widgets:
        splitter.addWidget(widget)
    return splitter
