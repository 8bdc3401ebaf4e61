"""Fitting the stage's words above a short diagram: the box that holds them asks
for exactly the height they take at its width, and a long explanation is cut at
a whole line with "…" (its full text one hover away) rather than half a line
showing at the box's bottom edge."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QTextLayout
from PySide6.QtWidgets import QScrollArea

ELLIPSIS_AIR = 4.0  # pixels kept free after "…", so the label never wraps it again


def elide_lines(text: str, font: QFont, width: float, lines: int) -> str:
    """``text`` as at most ``lines`` lines ``width`` wide, wrapped at words as a
    label wraps it; the last line ends in "…" when words were left out. The lines
    are joined with newlines, so the label breaks where they were measured."""
    if lines <= 0 or width <= 0:
        return text
    layout = QTextLayout(text, font)
    layout.beginLayout()
    spans: list[tuple[int, int]] = []
    while len(spans) < lines:
        line = layout.createLine()
        if not line.isValid():
            break
        line.setLineWidth(width)
        spans.append((line.textStart(), line.textLength()))
    layout.endLayout()
    if not spans or spans[-1][0] + spans[-1][1] >= len(text):
        return text  # it fits as it is
    kept = [text[start:start + length].rstrip() for start, length in spans[:-1]]
    rest = text[spans[-1][0]:].strip()
    last = QFontMetricsF(font).elidedText(rest, Qt.TextElideMode.ElideRight, width - ELLIPSIS_AIR)
    return "\n".join([*kept, last])


class HeaderBox(QScrollArea):
    """A scroll area that asks for its content's height at its own width (a wrapped
    label's plain size hint measures it at some other width), so a layout that has
    the room shows every line; only a window too short for the words scrolls."""

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        content = self.widget()
        if content is None or not content.isVisibleTo(self):
            return hint
        width = max(1, self.viewport().width() if self.width() > 0 else hint.width())
        height = content.heightForWidth(width)
        if height < 0:
            height = content.sizeHint().height()
        margins = self.contentsMargins()
        return QSize(hint.width(), height + margins.top() + margins.bottom())
