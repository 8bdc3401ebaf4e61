"""A paragraph that never grows past a few lines: in a narrow, short dock (a 2x screen) a
long note would be taller than the scroll view that holds it and cut at both edges, so it
shows its first lines whole, ends with "…", and gives the whole text on hover."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter, QTextLayout
from PySide6.QtWidgets import QLabel, QWidget


class ShortNote(QLabel):
    """A word-wrapped label of at most ``lines`` lines at any width; ``text()`` stays whole."""

    def __init__(self, text: str = "", lines: int = 3, parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self._lines = lines
        self.setWordWrap(True)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)

    def _wrapped(self, width: int) -> list[str]:
        """The text's lines at ``width`` px, as Qt wraps them."""
        layout = QTextLayout(self.text(), self.font())
        layout.beginLayout()
        lines = []
        while (line := layout.createLine()).isValid():
            line.setLineWidth(max(1, width))
            lines.append(self.text()[line.textStart():line.textStart() + line.textLength()].rstrip())
        layout.endLayout()
        return lines

    def shown_text(self) -> str:
        """What is drawn: the whole text, or its first lines and "…" (one line a row)."""
        width = self.contentsRect().width()
        lines = self._wrapped(width)
        if len(lines) <= self._lines:
            return self.text()
        kept = lines[:self._lines - 1]
        rest = " ".join(lines[self._lines - 1:])
        kept.append(self.fontMetrics().elidedText(rest, Qt.TextElideMode.ElideRight, width))
        return "\n".join(kept)

    def _height(self, shown_lines: int) -> int:
        margins = self.contentsMargins()
        return shown_lines * self.fontMetrics().lineSpacing() + margins.top() + margins.bottom()

    def heightForWidth(self, width: int) -> int:  # Qt's API
        margins = self.contentsMargins()
        lines = self._wrapped(width - margins.left() - margins.right())
        return self._height(min(len(lines), self._lines))

    def sizeHint(self) -> QSize:  # Qt's API
        hint = super().sizeHint()
        return QSize(hint.width(), min(hint.height(), self._height(self._lines)))

    def minimumSizeHint(self) -> QSize:  # Qt's API
        hint = super().minimumSizeHint()
        return QSize(hint.width(), min(hint.height(), self._height(self._lines)))

    def setText(self, text: str) -> None:
        super().setText(text)
        self._show_tip()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._show_tip()

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        flags = int(self.alignment()) | int(Qt.TextFlag.TextWordWrap)
        self.style().drawItemText(painter, self.contentsRect(), flags, self.palette(), self.isEnabled(),
                                  self.shown_text(), self.foregroundRole())

    def _show_tip(self) -> None:
        self.setToolTip(self.text() if self.shown_text() != self.text() else "")
