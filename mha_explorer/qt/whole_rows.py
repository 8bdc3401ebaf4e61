"""Scrolling views that never show a row in part: their viewport ends above the first row it
would cut, so no label, button or map at the edge is drawn half (a class reads a half line
as a fault of the picture, and the scroll bar already says there is more).

``WholeRowsArea`` is a scroll area whose rows are read from its content (the widgets that
show words or pictures, side by side where their heights overlap); ``WholeCells`` is mixed
into a table view, whose rows and columns are its headers' sections. Both scroll a row at a
time, so the first row in sight is whole as well.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QPoint
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


def _spans(content: QWidget) -> list[tuple[int, int]]:
    """The rows of ``content``: the vertical extents of what it shows, merged where they
    overlap, top to bottom, in its own pixels."""
    extents = []
    for widget in content.findChildren(QWidget):
        if widget.isHidden() or not widget.isVisibleTo(content):
            continue
        parent = widget.parentWidget()
        if parent is not content and isinstance(parent, WHOLE):
            continue  # a part of something read whole
        top = widget.mapTo(content, QPoint(0, 0)).y()
        if isinstance(widget, QGroupBox):  # its title is its own drawing
            extents.append((top, top + widget.fontMetrics().height() + 4))
        elif isinstance(widget, WHOLE) or not widget.findChildren(QWidget):
            extents.append((top, top + widget.height()))
    extents.sort()
    rows: list[tuple[int, int]] = []
    for top, bottom in extents:
        if rows and top < rows[-1][1]:
            rows[-1] = (rows[-1][0], max(rows[-1][1], bottom))
        else:
            rows.append((top, bottom))
    return rows


def _cut(rows: list[tuple[int, int]], start: int, end: int) -> int:
    """Where a view showing ``start``..``end`` of the rows should end instead, so that no
    row reaches past it: the top of the first row it would cut (``end`` when none is cut,
    or when that row is the first in sight and taller than the view)."""
    for top, bottom in rows:
        if top < end < bottom and top > start:
            return top
    return end


def _snapped(rows: list[tuple[int, int]], value: int, down: bool) -> int:
    """``value`` moved to a row's top when it falls inside a row: the next one scrolling
    down, this one scrolling up."""
    for top, bottom in rows:
        if top < value < bottom:
            return bottom if down else top
    return value


class WholeRowsArea(QScrollArea):
    """A QScrollArea whose viewport shows whole rows of its widget (see the module)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._last = 0
        self._fitting = False
        bar = self.verticalScrollBar()
        bar.valueChanged.connect(self._scrolled)
        bar.rangeChanged.connect(lambda *_: self._fit())

    def setWidget(self, widget: QWidget) -> None:  # Qt's API
        super().setWidget(widget)
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt's API
        if watched is self.widget() and event.type() in (QEvent.Type.Resize,
                                                           QEvent.Type.LayoutRequest):
            self._fit()
        return super().eventFilter(watched, event)

    def resizeEvent(self, event) -> None:  # Qt's API
        super().resizeEvent(event)
        self._fit()

    def _scrolled(self, value: int) -> None:
        bar = self.verticalScrollBar()
        content = self.widget()
        if not self._fitting and content is not None and value < bar.maximum():
            snapped = _snapped(_spans(content), value, value > self._last)
            if snapped != value:
                self._last = snapped
                bar.setValue(min(snapped, bar.maximum()))
                return
        self._last = value
        self._fit()

    def _fit(self) -> None:
        """The bottom margin that ends the viewport above the first row it would cut."""
        content = self.widget()
        if self._fitting or content is None:
            return
        margins = self.viewportMargins()
        full = self.viewport().height() + margins.bottom()
        start = self.verticalScrollBar().value()
        end = _cut(_spans(content), start, start + full)
        short = start + full - end
        if short != margins.bottom():
            self._fitting = True
            try:
                self.setViewportMargins(margins.left(), margins.top(), margins.right(), short)
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
