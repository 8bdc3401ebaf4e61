"""Draggable splits between the Lab's plots, and columns of words beside them that stay whole."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QSplitter, QWidget


def split(orientation: Qt.Orientation, *widgets: QWidget) -> QSplitter:
    """Panels side by side or one over the other, each border draggable, none collapsing
    to nothing (a collapsed plot looks like a missing one)."""
    splitter = QSplitter(orientation)
    splitter.setChildrenCollapsible(False)
    for widget in widgets:
        splitter.addWidget(widget)
    return splitter


class TallAsItsWords:
    """Mixed into a QWidget (before it) with a layout: never shorter than its wrapped words
    at its width, so that a short dock scrolls it rather than squeezing a paragraph into a
    cut line."""

    def minimumSizeHint(self) -> QSize:  # Qt's API
        hint = super().minimumSizeHint()
        width = max(hint.width(), self.width())
        return QSize(hint.width(), max(hint.height(), self.layout().totalHeightForWidth(width)))


class WordsColumn(TallAsItsWords, QWidget):
    """A column of words and pictures, as tall as its words need (TallAsItsWords)."""
