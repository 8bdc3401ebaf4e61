"""The PyTorch code of the whole layer, with the current stage's lines lit.

The text comes from core.reference_code for the live config (its shape
comments carry the real sizes), so the panel only shows it, colours comments
and keywords, and moves the highlight when the stage changes.
"""

from __future__ import annotations

import re

from PySide6.QtCore import Qt
from PySide6.QtGui import (QColor, QFont, QFontDatabase, QFontMetricsF, QPalette, QSyntaxHighlighter,
                           QTextCharFormat, QTextCursor, QTextFormat)
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit, QWidget

from ..core.reference_code import reference_code, stage_lines

CODE_PT = 13
MIN_CODE_PT, MAX_CODE_PT = 10.0, 15.0  # the font shrinks or grows so the longest line fits
HIGHLIGHT = QColor("#FFE9A8")  # warm yellow: reads as "you are here" on white and on a projector
PAPER, INK = QColor("#FFFFFF"), QColor("#111111")
KEYWORDS = ("def", "return", "import", "from", "as", "if", "else", "for", "in", "None")


class _PythonColours(QSyntaxHighlighter):
    """Comments green-grey, keywords bold blue, strings brown: enough to read
    the code from a distance, no more."""

    def __init__(self, document) -> None:
        super().__init__(document)
        self._comment = self._format("#3B6E3B", italic=True)
        self._keyword = self._format("#1F3F99", bold=True)
        self._string = self._format("#8A3B12")
        self._keyword_re = re.compile(r"\b(" + "|".join(KEYWORDS) + r")\b")
        self._string_re = re.compile(r"\"\"\".*?\"\"\"|\"[^\"]*\"|'[^']*'")

    @staticmethod
    def _format(color: str, bold: bool = False, italic: bool = False) -> QTextCharFormat:
        f = QTextCharFormat()
        f.setForeground(QColor(color))
        if bold:
            f.setFontWeight(700)
        f.setFontItalic(italic)
        return f

    def highlightBlock(self, text: str) -> None:
        comment_at = text.find("#")
        code = text if comment_at < 0 else text[:comment_at]
        for m in self._keyword_re.finditer(code):
            self.setFormat(m.start(), m.end() - m.start(), self._keyword)
        for m in self._string_re.finditer(code):
            self.setFormat(m.start(), m.end() - m.start(), self._string)
        if comment_at >= 0:
            self.setFormat(comment_at, len(text) - comment_at, self._comment)


class CodePanel(QPlainTextEdit):
    def __init__(self, controller, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._controller = controller
        self._ranges: dict[str, tuple[int, int]] = {}
        self._lines: tuple[int, int] = (0, 0)
        self.setObjectName("codePanel")
        self.setReadOnly(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        # selectable with the mouse (to copy into a notebook), but never focused: a
        # focused text edit would take the arrow keys the teacher steps stages with
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setPointSizeF(CODE_PT)
        self.setFont(font)
        palette = self.palette()
        palette.setColor(QPalette.ColorRole.Base, PAPER)
        palette.setColor(QPalette.ColorRole.Text, INK)
        self.setPalette(palette)
        self.setAccessibleName("PyTorch code of the layer")
        self._colours = _PythonColours(self.document())

        controller.config_changed.connect(self._show_code)
        controller.stage_changed.connect(self._highlight)
        self._show_code()

    # public ------------------------------------------------------------------------------
    def highlighted_range(self) -> tuple[int, int]:
        """(first, last) 1-based line numbers of the lit stage."""
        return self._lines

    def highlighted_lines(self) -> list[int]:
        """Line numbers (1-based) that carry the highlight, read back from the editor."""
        doc = self.document()
        return [doc.findBlock(sel.cursor.selectionStart()).blockNumber() + 1
                for sel in self.extraSelections()]

    def point_size(self) -> float:
        return self.font().pointSizeF()

    def _fit_width(self) -> None:
        """Pick the largest type (within limits) at which the longest line fits, so
        the code never needs a horizontal scroll bar."""
        lines = self.toPlainText().splitlines() or [""]
        room = self.viewport().width() - 2 * self.document().documentMargin() - 8

        def width_at(points: float) -> float:
            font = QFont(self.font())
            font.setPointSizeF(points)
            metrics = QFontMetricsF(font)
            return max(metrics.horizontalAdvance(line) for line in lines)

        # monospace: width grows in proportion to the size, so one measurement
        # gives the estimate; quarter-point steps down absorb hinting
        points = min(MAX_CODE_PT, max(MIN_CODE_PT, 100.0 * room / max(1.0, width_at(100.0))))
        points = int(points * 4) / 4
        while points > MIN_CODE_PT and width_at(points) > room:
            points -= 0.25
        if abs(points - self.font().pointSizeF()) >= 0.25:
            font = QFont(self.font())
            font.setPointSizeF(points)
            self.setFont(font)

    # rendering ---------------------------------------------------------------------------
    def _show_code(self, *_args) -> None:
        cfg = self._controller.config
        self.setPlainText(reference_code(cfg))
        self._fit_width()
        self._ranges = stage_lines(cfg)
        self._highlight(self._controller.stage)

    def _highlight(self, stage: str) -> None:
        first, last = self._ranges[stage]
        self._lines = (first, last)
        doc = self.document()
        selections = []
        for number in range(first, last + 1):
            sel = QTextEdit.ExtraSelection()
            sel.format.setBackground(HIGHLIGHT)
            sel.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            sel.cursor = QTextCursor(doc.findBlockByNumber(number - 1))
            selections.append(sel)
        self.setExtraSelections(selections)
        self._scroll_to(first, last)

    def _scroll_to(self, first: int, last: int, force: bool = False) -> None:
        """Bring the lit lines into view with a line of context, scrolling as little
        as possible so the start of the function stays on screen when it can."""
        bar = self.verticalScrollBar()
        visible = max(1, self.viewport().height() // max(1, self.fontMetrics().lineSpacing()))
        in_view = bar.value() + 1 <= max(1, first - 1) and last + 1 <= bar.value() + visible
        if in_view and not force:
            return
        top = max(0, last + 1 - visible)
        bar.setValue(min(top, max(0, first - 2)))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_width()
        self._scroll_to(*self._lines, force=True)
