"""A one-line label that gives up width before words, for the crowded status bar."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QLabel, QWidget


class ElidedLabel(QLabel):
    """Narrower than its text, it draws the text cut with "…" instead of clipping it
    mid-letter, and its tip then starts with the whole text. ``text()`` is always the whole
    text. It may shrink to ``least_chars`` average characters, so the status bar shares its
    width out when two progress bars and their Cancel buttons need room."""

    def __init__(self, least_chars: int = 8, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._least_chars = least_chars
        self._tip = ""

    def shown_text(self) -> str:
        """What is drawn: the text, or its start and "…"."""
        return self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight,
                                             self.contentsRect().width())

    def setText(self, text: str) -> None:
        super().setText(text)
        self._show_tip()

    def setToolTip(self, tip: str) -> None:
        self._tip = tip
        self._show_tip()

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        least = self.fontMetrics().averageCharWidth() * self._least_chars
        margins = self.contentsMargins()
        return QSize(min(hint.width(), least + margins.left() + margins.right()), hint.height())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._show_tip()

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        self.style().drawItemText(painter, self.contentsRect(), int(self.alignment()), self.palette(),
                                  self.isEnabled(), self.shown_text(), self.foregroundRole())

    def _show_tip(self) -> None:
        cut = self.text() and self.shown_text() != self.text()
        if not cut or self._tip.startswith(self.text()):  # the tip already says it all
            super().setToolTip(self._tip)
        else:
            super().setToolTip(f"{self.text()}\n{self._tip}" if self._tip else self.text())
