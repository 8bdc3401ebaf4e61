"""Panels side by side or one over the other, each border draggable, none collapsing
to nothing (a collapsed plot looks like a missing one)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QWidget


def _split(orientation: Qt.Orientation, *widgets: QWidget) -> QSplitter:
    split = QSplitter(orientation)
    split.setChildrenCollapsible(False)
    for widget in widgets:
        split.addWidget(widget)
    return split


def columns(*widgets: QWidget) -> QSplitter:
    return _split(Qt.Orientation.Horizontal, *widgets)


def rows(*widgets: QWidget) -> QSplitter:
    return _split(Qt.Orientation.Vertical, *widgets)
