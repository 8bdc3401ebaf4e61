"""The lab's attention maps in a grid, one per head: query rows down, keys across.

Built for refreshing while a model trains: a cell is a light view box with two
token axes (not a full PlotItem, whose menus and controls cost three times as
much to make), cells are made ahead of time a few per event-loop turn and then
reused for every run; maps are square, their cells no larger than map and
axes; and only the outer cells print token names (the left
column the queries, the bottom row the keys), like a facet grid, so a refresh
repaints little text. Colours run 0..1 on a fixed scale, so a map compares
frame to frame.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QSize, Qt, QTimer
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QGraphicsItem, QWidget

from mha_explorer.core.display.token_ticks import label_step, spaced_positions
from mha_explorer.qt.colormaps import lookup_table
from mha_explorer.qt.drawn import axis_texts, em_px, ground_of, item_in_window, map_shape, visible_part
from mha_explorer.qt.picture import DrawnShape, DrawnText

MAX_COLUMNS = 8
TITLE_SIZE = "9pt"
LABEL_PX = 13  # room one token name needs along an axis at the axes' type size
# fixed sizes around a map, so a cell's map can be made square before it is laid out
LEFT_AXIS_PX, BOTTOM_AXIS_PX, TITLE_PX, CELL_MARGIN_PX = 34, 21, 20, 2
GRID_MARGIN_PX, GRID_SPACING_PX = 4, 8
COMPACT_SIDE_PX = 56  # a map narrower than this is titled by its number alone
EXTRA_W = LEFT_AXIS_PX + 2 * CELL_MARGIN_PX
EXTRA_H = TITLE_PX + BOTTOM_AXIS_PX + 2 * CELL_MARGIN_PX


def map_side(columns: int, rows: int, width: float, height: float) -> float:
    """The side of each square map in a grid of ``columns`` × ``rows`` cells."""
    free_w = width - 2 * GRID_MARGIN_PX - (columns - 1) * GRID_SPACING_PX
    free_h = height - 2 * GRID_MARGIN_PX - (rows - 1) * GRID_SPACING_PX
    return min(free_w / columns - EXTRA_W, free_h / rows - EXTRA_H)


def grid_columns(count: int, width: float, height: float) -> int:
    """Columns for ``count`` maps in a width × height area: the most room per map."""
    if count <= 1:
        return 1
    best, best_side = 1, -1e9
    for columns in range(1, min(count, MAX_COLUMNS) + 1):
        side = map_side(columns, math.ceil(count / columns), width, height)
        if side > best_side + 1e-9:
            best, best_side = columns, side
    return best


class MapCell(pg.GraphicsLayout):
    """A title over one map, with its token axes."""

    def __init__(self, lut: np.ndarray, ink: QColor, parent: pg.GraphicsLayout):
        super().__init__(parent=parent)
        self.setVisible(False)  # until placed in the grid
        self.setContentsMargins(*(CELL_MARGIN_PX,) * 4)
        self.layout.setSpacing(0)
        self.ink = ink
        self.title = self.addLabel("", row=0, col=1, size=TITLE_SIZE, color=ink)
        self.title.setMinimumHeight(TITLE_PX)
        self.title.setMaximumHeight(TITLE_PX)
        self.view = pg.ViewBox(enableMenu=False, enableMouse=False, invertY=True)
        self.left = pg.AxisItem("left", linkView=self.view)
        self.bottom = pg.AxisItem("bottom", linkView=self.view)
        for axis in (self.left, self.bottom):
            # drawn once into a pixmap: a refreshed map repaints without re-laying its text
            axis.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self.set_ink(ink)
        self.left.setWidth(LEFT_AXIS_PX)  # fixed: a map is made square before its axes are filled
        self.bottom.setHeight(BOTTOM_AXIS_PX)
        self.addItem(self.left, row=1, col=0)
        self.addItem(self.view, row=1, col=1)
        self.addItem(self.bottom, row=2, col=1)
        self.image = pg.ImageItem(axisOrder="col-major")
        self.image.setLookupTable(lut)
        self.view.addItem(self.image)
        self.token_names: tuple[list[str], list[str]] = ([], [])  # printed down the left, along the bottom
        self.full_title, self.compact = "", False
        self.pending: tuple | None = None  # (tokens, labels, step, left, bottom) not yet applied

    def apply_pending(self) -> None:
        """The map's range and axes as last arranged (for a cell that waited, transparent)."""
        if self.pending is not None:
            tokens, labels, step, left, bottom = self.pending
            self.pending = None
            self.set_size(tokens)
            self.set_ticks(labels, step, left, bottom)
            self._show_title()

    def set_ink(self, ink: QColor) -> None:
        """The theme's text colour for the title and the token names (a theme switch)."""
        self.ink = QColor(ink)
        for axis in (self.left, self.bottom):
            axis.setTextPen(self.ink)
        if self.title.text:
            self.title.setText(self.title.text, size=TITLE_SIZE, color=self.ink)

    def drawn_texts(self, view) -> list[DrawnText]:
        """The title over the map and the token names beside and under it, in ``view``."""
        if not self.isVisible() or self.opacity() == 0.0:
            return []
        ground = ground_of(view)
        owner = f"lab map: {self.full_title}"
        texts = [*axis_texts(self.left, view, owner, ground), *axis_texts(self.bottom, view, owner, ground)]
        item = self.title.item
        if self.title.text:
            font = QFont(item.font())
            font.setPointSizeF(float(TITLE_SIZE.removesuffix("pt")))  # the markup's size
            margin = item.document().documentMargin()
            box = item.boundingRect().adjusted(margin, margin, -margin, -margin)
            texts.append(DrawnText(item.toPlainText(), item_in_window(view, item, box), em_px(font),
                                   self.ink, owner, visible_part(view), ground))  # its markup's
        return texts

    def set_size(self, tokens: int) -> None:
        self.view.setRange(xRange=(0, tokens), yRange=(0, tokens), padding=0)

    def set_ticks(self, labels: list[str] | None, step: int, left: bool, bottom: bool) -> None:
        """Token names every ``step``-th position on the outer axes; the inner ones keep
        their room (every map the same size) but print nothing."""
        ticks = [(j + 0.5, labels[j]) for j in spaced_positions(len(labels), step)] if labels else []
        self.token_names = ([t for _, t in ticks] if left else [], [t for _, t in ticks] if bottom else [])
        for axis, names in zip((self.left, self.bottom), self.token_names, strict=True):
            axis.setTicks([ticks if names else []])

    def show(self, data: np.ndarray, title: str) -> None:
        # ImageItem reads [x, y]: the transpose puts keys across and queries down
        self.image.setImage(np.ascontiguousarray(data.T, dtype=np.float32), levels=(0.0, 1.0))
        self.full_title = title
        self._show_title()

    def set_compact(self, compact: bool) -> None:
        """A map too small for "head 12" over it is titled "12": a title wider than its
        map would widen the cell past the grid."""
        self.compact = compact
        self._show_title()

    def _show_title(self) -> None:
        if self.pending is not None:  # a waiting cell's title is set when its turn comes
            return
        text = self.full_title.replace("head ", "") if self.compact else self.full_title
        if self.title.text != text:
            self.title.setText(text, size=TITLE_SIZE, color=self.ink)


class MapGrid(pg.GraphicsLayoutWidget):
    """``show_maps(maps [n, T, T], titles, labels)``; cells are reused while runs change."""

    NEW_CELLS_PER_TURN = 2
    TURN_MS = 4
    # cells that moved are painted this many per event-loop turn: painting all 16 maps with
    # their axes at once, after the grid changed shape, held a turn about 30 ms
    REVEAL_PER_TURN = 4

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent=parent)
        self.setBackground(None)
        self._lut = lookup_table()
        self._ink = self.palette().color(QPalette.ColorRole.WindowText)  # the theme's text colour
        self._pool: list[MapCell] = []  # every cell made so far
        self._placed: list[MapCell] = []  # the cells in the grid now, in head order
        self._columns = 0
        self._tokens = 0
        self._labels: list[str] | None = None
        self._later: tuple | None = None  # maps still waiting for cells
        self._unrevealed: list[MapCell] = []  # placed, waiting for their turn to be painted
        self._target = 0  # cells to make ahead of time
        self.ci.setContentsMargins(*(GRID_MARGIN_PX,) * 4)
        self.ci.layout.setSpacing(GRID_SPACING_PX)

    def prepare(self, count: int) -> None:
        """Make ``count`` cells ahead, a few per event-loop turn, while nothing is shown."""
        self._target = max(self._target, count)
        QTimer.singleShot(0, self, self._make_ahead)

    def _make_ahead(self) -> None:
        if self.closed:  # closed before its turn came: the scene has let its items go
            return
        for _ in range(self.NEW_CELLS_PER_TURN):
            if len(self._pool) >= self._target:
                return
            self._pool.append(MapCell(self._lut, self._ink, self.ci))
        QTimer.singleShot(self.TURN_MS, self, self._make_ahead)

    def show_maps(self, maps: np.ndarray, titles: list[str], labels: list[str] | None = None) -> None:
        """``maps`` float [n, T, T]; a grid larger than the cells made so far fills in over
        a few event-loop turns."""
        count = len(maps)
        missing = count - len(self._pool)
        for _ in range(min(missing, self.NEW_CELLS_PER_TURN)):
            self._pool.append(MapCell(self._lut, self._ink, self.ci))
        if missing > self.NEW_CELLS_PER_TURN:
            self._later = (maps, titles, labels)
            QTimer.singleShot(self.TURN_MS, self, self._continue)
        shown = min(count, len(self._pool))
        tokens = maps.shape[-1] if count else 0
        if shown != len(self._placed) or tokens != self._tokens or labels != self._labels:
            self._tokens, self._labels = tokens, labels
            self._arrange(shown)
        for cell, data, title in zip(self._placed, maps, titles, strict=False):
            cell.show(data, title)

    def _continue(self) -> None:
        if self._later is not None:
            later, self._later = self._later, None
            self.show_maps(*later)

    def _arrange(self, count: int) -> None:
        """Place the first ``count`` cells in the grid shape that gives each map the most room."""
        columns = grid_columns(count, self.width(), self.height())
        # the cells stay children of the grid's item for life: only the layout changes
        # (taking an item out of the scene and back muddles who deletes it)
        layout = self.ci.layout
        if columns != self._columns or count < len(self._placed):
            while layout.count():
                layout.removeAt(layout.count() - 1)
            for cell in self._placed:
                cell.setVisible(False)
            self._placed, self._columns = [], columns
        # more maps in the same columns: the placed cells stay, only new ones are added
        # (placing all 16 again was the longest turn of a sweep)
        for i in range(len(self._placed), count):
            cell = self._pool[i]
            if cell.ink != self._ink:  # made or last shown under the other theme
                cell.set_ink(self._ink)
            layout.addItem(cell, i // columns, i % columns)
            # laid out at once, but transparent (Qt does not paint it) until its turn
            cell.setOpacity(0.0)
            cell.setVisible(True)
            self._placed.append(cell)
            self._unrevealed.append(cell)
        placed = set(self._placed)
        self._unrevealed = [c for c in dict.fromkeys(self._unrevealed) if c in placed]
        if self._unrevealed:
            QTimer.singleShot(0, self, self._reveal)
        self._apply_ticks()

    def _apply_ticks(self) -> None:
        """Square maps as large as the grid allows (a cell no larger than its map and
        axes, centred), with token names as dense as they fit."""
        count, columns = len(self._placed), max(self._columns, 1)
        if not count:
            return
        rows = math.ceil(count / columns)
        side = max(8.0, map_side(columns, rows, self.width(), self.height()))
        step = label_step(self._tokens, LABEL_PX, side)
        layout = self.ci.layout
        for i, cell in enumerate(self._placed):
            cell.set_compact(side < COMPACT_SIDE_PX)
            # an aligned item gets its preferred size, so both say how big the cell is
            cell.setPreferredSize(side + EXTRA_W, side + EXTRA_H)
            cell.setMaximumSize(side + EXTRA_W, side + EXTRA_H)
            layout.setAlignment(cell, Qt.AlignmentFlag.AlignCenter)
            left = i % columns == 0
            bottom = i + columns >= count  # nothing under it in its column
            cell.pending = (self._tokens, self._labels, step, left, bottom)
            if cell not in self._unrevealed:  # a waiting cell gets its axes when its turn comes
                cell.apply_pending()
        # the grid may have been capped by the cells' old sizes: give it the view again
        self.ci.setGeometry(self.range)

    def _reveal(self) -> None:
        """Show the next few placed cells; the rest in later turns."""
        if self.closed:  # the scene has deleted the cells
            return
        k = self.REVEAL_PER_TURN
        now, self._unrevealed = self._unrevealed[:k], self._unrevealed[k:]
        for cell in now:
            cell.apply_pending()
            cell.setOpacity(1.0)
        if self._unrevealed:
            QTimer.singleShot(0, self, self._reveal)

    def revealed(self) -> bool:
        """Every placed cell is shown (none waits for its turn)."""
        return not self._unrevealed

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        # not the sum of its cells: beside the curves, the grid takes the room it is given
        return QSize(480, 320)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        # pyqtgraph resizes while it is being built, and while closing, after its scene
        # has deleted the cells
        if getattr(self, "_placed", None) and not self.closed:
            self._arrange(len(self._placed))

    def cell_count(self) -> int:
        """Maps shown now."""
        return len(self._placed)

    def cells(self) -> list[MapCell]:
        """The cells shown now, in head order."""
        return list(self._placed)

    def changeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "_pool"):
            self._ink = self.palette().color(QPalette.ColorRole.WindowText)  # a theme switch
            # only the cells in sight take the new ink now: the rest as they are placed or
            # shown (inking all 34 of the Lab's cells held a theme switch's turn 100 ms)
            if self.isVisible():
                self._ink_placed()
            self.resetCachedContent()  # the old theme's background, else, stays under the maps

    def showEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        self._ink_placed()

    def _ink_placed(self) -> None:
        for cell in self._placed:
            if cell.ink != self._ink:
                cell.set_ink(self._ink)

    # what a picture check reads ----------------------------------------------------------
    def drawn_texts(self) -> list[DrawnText]:
        if not self.isVisible():
            return []
        return [t for cell in self._placed for t in cell.drawn_texts(self)]

    def drawn_shapes(self) -> list[DrawnShape]:
        if not self.isVisible():
            return []
        return [shape for cell in self._placed if cell.isVisible() and cell.opacity() > 0.0
                for shape in map_shape(self, cell.view, f"lab map: {cell.full_title}", cell.full_title)]
