"""Scrolling views that never show a row (or a column) in part: their viewport ends before
the first one it would cut, so no label, button or map at the edge is drawn half (a class
reads a half line as a fault of the picture, and the scroll bar already says there is more).

``WholeRowsArea`` is a scroll area whose rows are read from its content (the widgets that
show words or pictures; one taller than half the view, a plot, is cut as it scrolls);
``WholeCells`` is mixed into a table view, whose rows and columns are its headers'
sections. Both scroll a row at a time, so the first row in sight is whole as well.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractScrollArea,
    QAbstractSpinBox,
    QComboBox,
    QGroupBox,
    QHeaderView,
    QLabel,
    QLineEdit,
    QScrollArea,
    QTableWidget,
    QWidget,
)

# widgets that are one thing to read, whatever they hold (a spin box's line edit is its own)
WHOLE = (QLabel, QAbstractButton, QAbstractSpinBox, QComboBox, QLineEdit, QAbstractScrollArea)


def _spans(content: QWidget, across: bool = False) -> list[tuple[int, int]]:
    """The extents of what ``content`` shows (labels, fields, buttons, views), down its
    height (``across``: along its width), in its own pixels. One walk down the visible
    widgets that stops at each thing read whole: what it holds is part of it (a scroll
    area's own content, a spin box's line edit). It runs on every resize of a dock, so it
    visits each widget once (asking every container for all of its descendants held the
    turn that opened the Lab 450 ms)."""
    extents = []

    def walk(parent: QWidget, offset: int) -> None:
        for widget in parent.findChildren(QWidget, options=Qt.FindChildOption.FindDirectChildrenOnly):
            if widget.isHidden() or widget.isWindow():
                continue  # not shown, nor anything in it; or shown in a window of its own
            first = offset + (widget.x() if across else widget.y())
            length = widget.width() if across else widget.height()
            if isinstance(widget, WHOLE):
                extents.append((first, first + length))
                continue
            if isinstance(widget, QGroupBox) and not across:  # its title is its own drawing
                extents.append((first, first + widget.fontMetrics().height() + 4))
            if any(isinstance(child, QWidget) for child in widget.children()):
                walk(widget, first)
            elif not isinstance(widget, QGroupBox):
                extents.append((first, first + length))

    walk(content, 0)
    return extents


def _straddling(spans: list[tuple[int, int]], y: int, view: int) -> list[tuple[int, int]]:
    """The spans shorter than half the ``view`` that ``y`` would cut. A taller one (a plot,
    a page of maps) is cut as it is scrolled: leaving it out would leave the view empty."""
    return [(top, bottom) for top, bottom in spans if top < y < bottom and bottom - top < view / 2]


def _cut(spans: list[tuple[int, int]], start: int, end: int) -> int:
    """Where a view showing ``start``..``end`` should end instead so that it cuts nothing
    (``_straddling``): above every span it would cut, and above those that edge cuts."""
    y = end
    while cut := _straddling(spans, y, end - start):
        y = min(top for top, _bottom in cut)
        if y <= start:
            return end  # nothing whole fits: as it is
    return y


def _snapped(spans: list[tuple[int, int]], value: int, down: bool, view: int) -> int:
    """``value`` moved off the spans it would cut (``_straddling``): below them scrolling
    down, above them scrolling up."""
    while cut := _straddling(spans, value, view):
        value = max(b for _t, b in cut) if down else min(t for t, _b in cut)
    return value


class WholeRowsArea(QScrollArea):
    """A QScrollArea whose viewport shows whole rows (and, scrolling sideways, whole
    columns) of its widget (see the module)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._last = {False: 0, True: 0}  # the scroll value before, down and across
        self._fitting = False
        # a change of size or content is fitted once, after the turn's layouts: fitted at each
        # resize, the margins resized the content, which asked for a new fit, over and over
        # (opening the Lab as a window of its own resized its plots 560 times in one turn)
        self._fit_later = QTimer(self, singleShot=True, interval=0)
        self._fit_later.timeout.connect(self._fit)
        for across, bar in ((False, self.verticalScrollBar()), (True, self.horizontalScrollBar())):
            bar.valueChanged.connect(lambda value, a=across: self._scrolled(value, a))
            bar.rangeChanged.connect(self._fit_later.start)

    def setWidget(self, widget: QWidget) -> None:  # Qt's API
        super().setWidget(widget)
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt's API
        if watched is self.widget() and event.type() in (QEvent.Type.Resize,
                                                           QEvent.Type.LayoutRequest):
            self._fit_later.start()
        return super().eventFilter(watched, event)

    def resizeEvent(self, event) -> None:  # Qt's API
        super().resizeEvent(event)
        self._fit_later.start()

    def _full(self, across: bool) -> int:
        """The viewport's length as if no margin shortened it."""
        margins, port = self.viewportMargins(), self.viewport()
        return port.width() + margins.right() if across else port.height() + margins.bottom()

    def _scrolled(self, value: int, across: bool) -> None:
        bar = self.horizontalScrollBar() if across else self.verticalScrollBar()
        content = self.widget()
        if not self._fitting and content is not None and value < bar.maximum():
            snapped = _snapped(_spans(content, across), value, value > self._last[across],
                               self._full(across))
            if snapped != value:
                self._last[across] = snapped
                bar.setValue(min(snapped, bar.maximum()))
                return
        self._last[across] = value
        self._fit()

    def _short(self, content: QWidget, across: bool) -> int:
        """How much shorter than its whole length the viewport is made, down or across."""
        full = self._full(across)
        start = (self.horizontalScrollBar() if across else self.verticalScrollBar()).value()
        return start + full - _cut(_spans(content, across), start, start + full)

    def _fit(self) -> None:
        """The right and bottom margins that end the viewport before what it would cut."""
        content = self.widget()
        if self._fitting or content is None:
            return
        margins = self.viewportMargins()
        bottom = self._short(content, False)
        sideways = self.horizontalScrollBarPolicy() != Qt.ScrollBarPolicy.ScrollBarAlwaysOff
        right = self._short(content, True) if sideways else 0
        if (right, bottom) != (margins.right(), margins.bottom()):
            self._fitting = True
            try:
                self.setViewportMargins(margins.left(), margins.top(), right, bottom)
            finally:
                self._fitting = False


def _partial(header: QHeaderView, full: int) -> int:
    """How much of ``full`` pixels along ``header`` a section in part takes at its end."""
    if header.count() == 0:
        return 0
    end = 0
    for visual in range(header.visualIndexAt(0) if header.visualIndexAt(0) >= 0 else 0, header.count()):
        logical = header.logicalIndex(visual)
        if header.isSectionHidden(logical):
            continue
        right = header.sectionViewportPosition(logical) + header.sectionSize(logical)
        if right > full:
            # the first section in sight is not left out, however wide
            return full - end if end > 0 else 0
        end = right
    return 0


class WholeCells:
    """Mixed into a QTableView (before it): whole columns and rows only, scrolled a cell at
    a time. Qt sets the viewport's margins for the headers each time it lays the view out;
    the right and bottom ones are added here after it, for the cell it would cut."""

    _whole_fitting = False

    def whole_cells(self) -> None:
        """Call once from the view's constructor."""
        self.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerItem)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerItem)
        for bar in (self.horizontalScrollBar(), self.verticalScrollBar()):
            bar.valueChanged.connect(lambda *_: self.updateGeometries())

    def updateGeometries(self) -> None:  # Qt's API
        if self._whole_fitting:
            return  # the margins below moved the viewport: the ranges stand as measured
        super().updateGeometries()  # margins for the headers, ranges for the whole viewport
        port = self.viewport()
        right = _partial(self.horizontalHeader(), port.width())
        bottom = _partial(self.verticalHeader(), port.height())
        if not right and not bottom:
            return
        margins = self.viewportMargins()
        self._whole_fitting = True
        try:
            self.setViewportMargins(margins.left(), margins.top(), right, bottom)
            box = port.geometry()
            across, down = self.horizontalHeader(), self.verticalHeader()
            if not across.isHidden():
                across.setGeometry(box.left(), across.y(), box.width(), across.height())
            if not down.isHidden():
                down.setGeometry(down.x(), box.top(), down.width(), box.height())
        finally:
            self._whole_fitting = False


class WholeTable(WholeCells, QTableWidget):
    """A QTableWidget that shows whole cells only (WholeCells)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.whole_cells()
