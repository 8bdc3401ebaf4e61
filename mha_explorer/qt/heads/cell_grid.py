"""The grid of small maps in the heads panel: a pool of built cells, one per map shown, with
blank stand-ins holding the places of the cells not built yet, and the layout that picks the
columns and the scroll bar for the room there is. A mixin of the panel (as PresentingMaps is),
so the panel keeps deciding what is drawn and this module only where each map sits.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QWidget

from mha_explorer.qt.heads.focused_head import ThumbCell
from mha_explorer.qt.heads.grid_shape import MIN_CELL_PX, THUMB_MIN_PX, columns_and_scrolling
from mha_explorer.qt.heads.head_cell import HeatmapCell

POOL_KEEP = 32  # cells kept beyond what is shown


class CellPlace(QWidget):
    """A cell's place in the grid while its cell is not built: as large as a cell asks to
    be, so the cell that takes it later changes nothing around it."""

    def __init__(self, like, parent: QWidget) -> None:
        super().__init__(parent)
        self._like = like  # () -> a built cell, or None

    def sizeHint(self) -> QSize:
        cell = self._like()
        return cell.sizeHint() if cell is not None else self.minimumSize()


class CellGrid:
    """The panel's cells and their places: ``cells``, ``image_items``; the panel sets
    ``_pool``, ``_places``, ``_shown``, ``_grid``, ``_grid_host`` and ``scroll``."""

    @property
    def cells(self) -> list[HeatmapCell]:
        """The built cells of the maps shown, in head order (all of them once drawn)."""
        return self._pool[:self._shown]

    @property
    def image_items(self) -> list[pg.ImageItem]:
        return [c.image for c in self.cells]

    def _show_count(self, count: int) -> None:
        """Give ``count`` maps their places in the grid (built cells first, stand-ins for the
        rest), and lay it out if the count changed."""
        if count == self._shown:
            return
        for cell in self._pool[count:]:
            cell.hide()
            cell.image.clear()  # drop the reference to an old trace's arrays
        # keep a modest pool for stepping back and forth; free the rest so one
        # visit to a many-head config does not hold its plots for the session
        keep = max(count, POOL_KEEP)
        for cell in self._pool[keep:]:
            self._grid.removeWidget(cell)
            cell.deleteLater()
        del self._pool[keep:]
        self._shown = count
        self.bar_view.set_items([*self.image_items, self.focus.image])
        self._layout_grid(force=True)

    def _slot(self, index: int) -> QWidget:
        """What holds map ``index``'s place: its cell, or a stand-in until the cell is built."""
        if index < len(self._pool):
            return self._pool[index]
        while len(self._places) <= index - len(self._pool):
            place = CellPlace(lambda: self._pool[0] if self._pool else None, self._grid_host)
            place.setMinimumSize(self._smallest(), self._smallest())
            self._places.append(place)
        return self._places[index - len(self._pool)]

    def _build_cells(self, stop: int) -> None:
        """Cells for the maps up to ``stop``, each taking its stand-in's place in the grid."""
        built = False
        while len(self._pool) < min(stop, self._shown):
            index = len(self._pool)
            place = self._slot(index)
            cell = ThumbCell(parent=self._grid_host)
            cell.setMinimumSize(self._smallest(), self._smallest())
            cell.set_footer_line(self._thumb_footers)
            cell.view.set_axes_shown(not self._presenting)  # the large map names the tokens
            cell.hovered.connect(lambda r, c, i=index: self._on_hover(i, r, c))
            cell.left.connect(lambda: self.hover_label.setText(" "))
            cell.activated.connect(lambda i=index: self.open_head(i))
            self._pool.append(cell)
            self._places.remove(place)
            self._places.append(place)  # the stand-ins stay in order behind the built cells
            self._grid.replaceWidget(place, cell)
            place.hide()
            cell.show()
            built = True
        if built:
            self._grid.activate()  # each new cell at its place's size before its map is drawn
            self.bar_view.set_items([*self.image_items, self.focus.image])

    def _smallest(self) -> int:
        """The least side of a cell: presentation shows every head in sight, however small."""
        return THUMB_MIN_PX if self._presenting else MIN_CELL_PX

    def _layout_grid(self, force: bool = False) -> None:
        if self._laying_out:  # the scroll bar switched below: its resize comes back here
            return
        view = self.scroll.viewport().size()
        spacing = self._grid.spacing()
        bar = self.scroll.verticalScrollBar()
        on = Qt.ScrollBarPolicy.ScrollBarAlwaysOn
        bar_px = bar.sizeHint().width()
        width = view.width() + (bar_px if self.scroll.verticalScrollBarPolicy() == on else 0)
        smallest = self._smallest()
        for cell in self._pool:
            cell.view.set_axes_shown(not self._presenting)  # the large map names the tokens
        for widget in (*self._pool, *self._places):
            widget.setMinimumSize(smallest, smallest)
        fit = self._thumb_words() if self._presenting else {}
        cols, scrolls = columns_and_scrolling(self._shown, width, view.height(), smallest, spacing,
                                              bar_px, fit)
        # Show the bar before the cells are placed, not once they have been painted:
        # a bar that appears later narrows every cell and repaints every axis.
        self._laying_out = True
        try:
            self.scroll.setVerticalScrollBarPolicy(
                Qt.ScrollBarPolicy.ScrollBarAlwaysOff if self._figure_only  # a picture
                else on if scrolls else Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        finally:
            self._laying_out = False
        if cols == self.columns and not force:
            return
        self.columns = cols
        for widget in (*self._pool, *self._places):
            self._grid.removeWidget(widget)
        slots = [self._slot(i) for i in range(self._shown)]
        for i, slot in enumerate(slots):
            self._grid.addWidget(slot, i // cols, i % cols)
            slot.show()
        for place in self._places[len(slots) - min(len(slots), len(self._pool)):]:
            place.hide()  # beyond the maps shown
        for c in range(self._grid.columnCount()):
            self._grid.setColumnStretch(c, 1 if c < cols else 0)
        rows = math.ceil(self._shown / cols) if self._shown else 0
        for r in range(self._grid.rowCount()):
            self._grid.setRowStretch(r, 1 if r < rows else 0)
