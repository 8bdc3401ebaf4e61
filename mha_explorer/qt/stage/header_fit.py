"""Fitting the stage's words above a short diagram: the box that holds them asks
for exactly the height they take at its width, and a long explanation is cut at
a whole line with "…" (its full text one hover away) rather than half a line
showing at the box's bottom edge."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QTextLayout
from PySide6.QtWidgets import QBoxLayout, QLabel, QScrollArea, QWidget

QWIDGETSIZE_MAX = (1 << 24) - 1  # Qt's "no maximum"
ELLIPSIS_AIR = 4.0  # pixels kept free after "…", so the label never wraps it again
HEADER_MARGINS = (16, 10, 12, 6)  # left, top, right, bottom
TERSE_MARGINS = (16, 4, 12, 2)  # cut to fit: every pixel to the diagram
SPACING, TERSE_SPACING = 8, 3  # between the header's lines; tighter when it is cut to fit
CUT_LINES = (3, 2, 1)  # the lines a cut label keeps, tried in turn
TITLE_SHRINK = (0.85, 0.7)  # of its own size, tried in turn: a cut header's title too tall for its room


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
    the room shows every line; only a window too short for the words scrolls.

    Its hint follows its content: a line shown or hidden inside (the costs again after
    presentation) asks the content's layout again, and the box passes that on to its own
    layout, which would otherwise keep the hint it cached and show the last line cut."""

    def setWidget(self, widget: QWidget) -> None:  # Qt's API
        super().setWidget(widget)
        widget.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:  # Qt's API
        if watched is self.widget() and event.type() == QEvent.Type.LayoutRequest:
            self.updateGeometry()
        return super().eventFilter(watched, event)

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


class HeaderFitter:
    """Fits a stage header's words over a short diagram. When all of them do not fit
    the height left above the diagram's minimum, the title joins the head selector's
    row (the stage counter, which the stepper above repeats, and the costs go into the
    title's tooltip), and the ``cuttable`` labels (explanation, sentence, scaling
    numbers) are cut at whole lines (3, 2, then 1) with "…", their full text on hover.
    A teacher still reads the stage's first words at a glance, and the diagram keeps
    the height its grid needs."""

    def __init__(self, header: QWidget, lines: QBoxLayout, top_row: QBoxLayout, *, title: QLabel,
                 counter: QLabel, costs: QLabel, cuttable: tuple[QLabel, ...],
                 formula: QLabel | None = None) -> None:
        self._header, self._lines, self._top_row = header, lines, top_row
        self._title, self._counter, self._costs = title, counter, costs
        self._cuttable = cuttable
        self._formula = formula  # cut last, once the others are folded away
        self._full: dict[QLabel, str] = {}  # what a label cut to fit says in full
        self._dropped: list[QLabel] = []  # labels taken out of a header too short for a line of them
        self.terse = False
        self._fitting = False
        self._shrunk: tuple[QFont, QFont] | None = None  # the title's own font, and the smaller one set

    def say(self, label: QLabel, text: str) -> None:
        """Set a label that may be cut to fit; the full text is kept for the fit."""
        self._full[label] = text
        label.setText(text)
        label.setToolTip("")

    def fit(self, width: int, budget: int | None, bar: int, presenting: bool, title_spare: int = 0) -> None:
        """Fit the words ``width`` wide into ``budget`` pixels of height (None: no
        limit, the header beside the diagram or in a picture); ``bar``: the scroll
        bar's width, kept free so a label cut here is not wrapped again. Cut to fit, the
        rest may scroll but the title's row shows whole in ``budget + title_spare`` (what
        the picture below can give it), its type made smaller when it needs that."""
        if self._fitting:  # the changes below come back here through the layout
            return
        self._fitting = True
        try:
            self._title_back()
            for label in self._dropped:  # unfolded, to be measured again
                label.setMaximumHeight(QWIDGETSIZE_MAX)
            self._dropped = []
            for label, text in self._full.items():
                label.setText(text)
                label.setToolTip("")
            self._set_terse(False, presenting)
            if budget is None or width <= 0 or self._header.heightForWidth(width) <= budget:
                return
            self._set_terse(True, presenting)
            text_width = width - TERSE_MARGINS[0] - TERSE_MARGINS[2] - bar
            # measured beside the scroll bar a header too tall for its box shows: without it
            # the words wrapped a line shorter than they are drawn, and the last was cut
            inside = width - bar
            self._cut(text_width, inside, budget)
            self._drop_lines(inside, budget)
            self._cut_formula(inside, text_width, budget)
            self._shrink_title(width - bar, budget + title_spare)
        finally:
            self._fitting = False

    def _cut(self, text_width: int, width: int, budget: int) -> None:
        """Cut the labels one by one, in the order given (the prose before the data: the
        sentence, which the class reads off the diagram, last), each to 3, 2, then 1 lines,
        until the header fits ``budget``."""
        for label in self._cuttable:
            full = self._full.get(label, "")
            for lines in CUT_LINES:
                cut = elide_lines(full, label.font(), text_width, lines)
                label.setText(cut)
                label.setToolTip(full if cut != full else "")
                if self._header.heightForWidth(width) <= budget:
                    return

    def _drop_lines(self, width: int, budget: int) -> None:
        """Still too tall at one line each: the cut words go to the title's hover, in the order
        they were cut, rather than showing a sliver of a line at the box's edge."""
        for label in self._cuttable:
            if self._header.heightForWidth(width) <= budget:
                return
            full = self._full.get(label, "")
            if label.isHidden() or not full:
                continue
            label.setText("")
            label.setMaximumHeight(0)  # folded away: whether it is shown stays the view's to say
            self._dropped.append(label)
            self._title.setToolTip("\n".join(filter(None, [self._title.toolTip(), full])))

    def _cut_formula(self, width: int, text_width: int, budget: int) -> None:
        """The formula at 2 lines, then 1, with "…" (whole on hover), when even without the
        other words the header is too tall (a long formula over a laptop's RoPE plot)."""
        if self._formula is None or self._formula not in self._full:
            return
        full = self._full[self._formula]
        for lines in CUT_LINES[1:]:
            if self._header.heightForWidth(width) <= budget:
                return
            cut = elide_lines(full, self._formula.font(), text_width, lines)
            self._formula.setText(cut)
            self._formula.setToolTip(full if cut != full else "")
        if self._header.heightForWidth(width) > budget:  # not a line of it: on the title's hover
            self._formula.setText("")
            self._formula.setMaximumHeight(0)
            self._dropped.append(self._formula)
            self._title.setToolTip("\n".join(filter(None, [self._title.toolTip(), full])))

    def _shrink_title(self, width: int, room: int) -> None:
        own = self._title.font()
        for scale in TITLE_SHRINK:
            if self.title_room(width) <= room:
                return
            smaller = QFont(own)
            smaller.setPointSizeF(own.pointSizeF() * scale)
            self._title.setFont(smaller)
            self._shrunk = (own, smaller)

    def _title_back(self) -> None:
        """The title's own size again (unless the view has set a new one since)."""
        if self._shrunk is not None and self._title.font() == self._shrunk[1]:
            self._title.setFont(self._shrunk[0])
        self._shrunk = None

    def title_room(self, width: int) -> int:
        """Height the header needs, ``width`` wide, to show the title's row whole once cut to
        fit (the row beside the head selector, and its margins); 0 when not cut: then all of
        it fits its budget. The rest of a cut header may scroll, never the title."""
        if not self.terse:
            return 0
        left, top, right, bottom = TERSE_MARGINS
        self._top_row.invalidate()  # measured again after a change of the title's type
        row = self._top_row.heightForWidth(width - left - right) if self._top_row.hasHeightForWidth() else -1
        return top + (row if row >= 0 else self._top_row.sizeHint().height()) + bottom

    def _set_terse(self, on: bool, presenting: bool) -> None:
        """The title beside the head selector, or on its own line under the counter."""
        if on == self.terse:
            return
        self.terse = on
        self._lines.removeWidget(self._title)
        self._top_row.removeWidget(self._title)
        if on:
            self._top_row.insertWidget(0, self._title, 1)
            self._title.setToolTip(f"{self._counter.text()}\n{self._costs.text()}")
        else:
            self._lines.insertWidget(1, self._title)
            self._title.setToolTip("")
        self._counter.setVisible(not on)
        self._costs.setVisible(not on and not presenting)
        self._lines.setSpacing(TERSE_SPACING if on else SPACING)
        self._lines.setContentsMargins(*(TERSE_MARGINS if on else HEADER_MARGINS))
