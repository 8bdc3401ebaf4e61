"""The PyTorch code of the whole layer, with the current stage's lines lit.

The text comes from core.reference_code for the live config (its shape
comments carry the real sizes), so the panel only shows it, colours comments
and keywords, and moves the highlight when the stage changes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QFontMetricsF,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextCursor,
    QTextFormat,
)
from PySide6.QtWidgets import QApplication, QPlainTextEdit, QTextEdit, QWidget

from mha_explorer.core.text.reference_code import reference_code, stage_lines
from mha_explorer.qt.shell.first_paint import FirstPaint
from mha_explorer.qt.shell.theme import Theme, theme_of

if TYPE_CHECKING:
    from mha_explorer.qt.controller import Controller

CODE_PT = 13
MIN_CODE_PT, MAX_CODE_PT = 10.0, 15.0  # the font shrinks or grows so the longest line fits
GROWTH = 1.25  # how far above the application's type the code may grow to fill its width
KEYWORDS = ("def", "return", "import", "from", "as", "if", "else", "for", "in", "None")


class _PythonColours(QSyntaxHighlighter):
    """Comments green-grey, keywords bold blue, strings brown: enough to read
    the code from a distance, no more."""

    def __init__(self, document, theme: Theme) -> None:
        super().__init__(document)
        self._keyword_re = re.compile(r"\b(" + "|".join(KEYWORDS) + r")\b")
        self._string_re = re.compile(r"\"\"\".*?\"\"\"|\"[^\"]*\"|'[^']*'")
        self.set_theme(theme)

    def set_theme(self, theme: Theme) -> None:
        self._comment = self._format(theme.code_comment, italic=True)
        self._keyword = self._format(theme.code_keyword, bold=True)
        self._string = self._format(theme.code_string)
        self.rehighlight()

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


class CodePanel(FirstPaint, QPlainTextEdit):
    def __init__(self, controller: Controller, parent: QWidget | None = None) -> None:
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
        self.setAccessibleName("PyTorch code of the layer")
        self.setToolTip("The whole layer in PyTorch; the current stage's lines are lit")
        # paper and ink come from the palette (the theme); the lit lines and the
        # syntax colours from the theme the palette belongs to
        self._theme = theme_of(self)
        self._colours = _PythonColours(self.document(), self._theme)

        # in a turn of its own: the whole listing is set, highlighted and laid out again
        controller.later.on(controller.config_changed, self._show_code)
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
        self.run_held()
        return self.font().pointSizeF()

    def refit(self) -> None:
        """Choose the type size again (the application's type changed: presentation mode)."""
        self._fit_width()
        self._scroll_to(*self._lines, force=True)

    @staticmethod
    def type_limits() -> tuple[float, float]:
        """Smallest and largest code type: never below the application's own type,
        so presentation mode (a larger application font) enlarges the code too."""
        base = QApplication.font().pointSizeF()
        return max(MIN_CODE_PT, base), max(MAX_CODE_PT, base * GROWTH)

    def _fit_width(self) -> None:
        """The type fitted to the width now, or (while hidden) as the panel shows: built at a
        width of a few pixels, it measured every line at every size down to the smallest.
        Not held for the paint itself: a type changed there leaves the document's old width
        behind, and a horizontal scroll bar with it."""
        if self.isVisible():
            self._measure_fit()
        else:
            self.hold(self._fit_and_scroll)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.run_held()

    def _fit_and_scroll(self) -> None:
        self._measure_fit()
        self._scroll_to(*self._lines, force=True)

    def _measure_fit(self) -> None:
        """Pick the largest type (within limits) at which the longest line fits, so
        the code never needs a horizontal scroll bar; when even the smallest type is
        too wide (a narrow panel, or presentation type), long lines wrap instead."""
        lines = self.toPlainText().splitlines() or [""]
        room = self.viewport().width() - 2 * self.document().documentMargin() - 8
        low, high = self.type_limits()

        def width_at(points: float) -> float:
            font = QFont(self.font())
            font.setPointSizeF(points)
            metrics = QFontMetricsF(font)
            return max(metrics.horizontalAdvance(line) for line in lines)

        # monospace: width grows in proportion to the size, so one measurement
        # gives the estimate; quarter-point steps down absorb hinting
        points = min(high, max(low, 100.0 * room / max(1.0, width_at(100.0))))
        points = int(points * 4) / 4
        while points > low and width_at(points) > room:
            points -= 0.25
        if abs(points - self.font().pointSizeF()) >= 0.25:
            font = QFont(self.font())
            font.setPointSizeF(points)
            self.setFont(font)
        wrap = (QPlainTextEdit.LineWrapMode.WidgetWidth if width_at(points) > room
                else QPlainTextEdit.LineWrapMode.NoWrap)
        if wrap != self.lineWrapMode():
            self.setLineWrapMode(wrap)

    # rendering ---------------------------------------------------------------------------
    def _show_code(self, *_args) -> None:
        cfg = self._controller.config
        self.setPlainText(reference_code(cfg))
        self._fit_width()
        self._ranges = stage_lines(cfg)
        self._highlight(self._controller.stage)

    def _highlight(self, stage: str) -> None:
        if self._controller.later.pending(self._show_code):
            return  # a new config's listing is on its way and lights its stage itself
        first, last = self._ranges[stage]
        self._lines = (first, last)
        doc = self.document()
        selections = []
        for number in range(first, last + 1):
            sel = QTextEdit.ExtraSelection()
            sel.format.setBackground(QColor(self._theme.code_highlight))
            sel.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            cursor = QTextCursor(doc.findBlockByNumber(number - 1))
            # the whole block, so a line wrapped in presentation mode is lit on every row
            cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock,
                                QTextCursor.MoveMode.KeepAnchor)
            sel.cursor = cursor
            selections.append(sel)
        self.setExtraSelections(selections)
        self._scroll_to(first, last)

    def _scroll_to(self, first: int, last: int, force: bool = False) -> None:
        """Bring the lit lines into view with a line of context, scrolling as little
        as possible so the start of the function stays on screen when it can."""
        bar = self.verticalScrollBar()
        if self.lineWrapMode() != QPlainTextEdit.LineWrapMode.NoWrap:
            # wrapped blocks take two or more rows, and the bar counts rows: the lit
            # lines go to the top, under one line of context
            if force or not (self._block_in_view(max(1, first - 1)) and self._block_in_view(last)):
                doc = self.document()
                bar.setValue(sum(doc.findBlockByNumber(i).lineCount() for i in range(first - 2)))
            return
        visible = max(1, self.viewport().height() // max(1, self.fontMetrics().lineSpacing()))
        in_view = bar.value() + 1 <= max(1, first - 1) and last + 1 <= bar.value() + visible
        if in_view and not force:
            return
        top = max(0, last + 1 - visible)
        bar.setValue(min(top, max(0, first - 2)))

    def _block_in_view(self, number: int) -> bool:
        block = self.document().findBlockByNumber(number - 1)
        rect = self.blockBoundingGeometry(block).translated(self.contentOffset())
        return rect.top() >= 0 and rect.bottom() <= self.viewport().height()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_width()
        self._scroll_to(*self._lines, force=True)


    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        kind = event.type()
        if kind == QEvent.Type.PaletteChange:
            theme = theme_of(self)
            if theme is not self._theme:  # light <-> dark: new syntax colours and light
                self._theme = theme
                self._colours.set_theme(theme)
                self._highlight(self._controller.stage)
        elif kind == QEvent.Type.ApplicationFontChange:  # a top-level panel of its own
            self.refit()
