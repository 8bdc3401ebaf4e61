"""The one colour bar beside a set of heads' maps: it hands its colour map and levels to every
map it colours, so what is drawn always matches what is labelled, and it words its own title
and numbers to fit its height and the current type. The colour map computes each lookup table
once (_TablesOnce), as every map of a grid asks it for the same one. The heads panel and the
head dialog each own one bar; the cells only take their colours from it.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QGraphicsView

from mha_explorer.core.display.head_maps import StageMaps
from mha_explorer.qt.drawn import axis_texts, axis_title, ground_of, map_shape
from mha_explorer.qt.heads.head_cell import ink_axes
from mha_explorer.qt.picture import DrawnShape, DrawnText

COLOR_BAR_PX = 96


class _TablesOnce(pg.ColorMap):
    """A colour map that computes each lookup table once: the colour bar hands its map to every
    image it colours, and each image asked it for the same table again, an interpolation
    each (128 maps: about 120 ms of one event-loop turn)."""

    def __init__(self, name: str) -> None:
        found = pg.colormap.get(name)
        positions, colours = found.getStops(mode=pg.ColorMap.BYTE)
        super().__init__(positions, colours, mapping=found.mapping_mode, name=found.name)
        self._tables: dict[tuple, np.ndarray] = {}

    def getLookupTable(self, start=0.0, stop=1.0, nPts=512, alpha=None, mode=pg.ColorMap.BYTE):  # noqa: N802, N803
        key = (start, stop, nPts, alpha, mode)
        if key not in self._tables:
            table = super().getLookupTable(start, stop, nPts, alpha, mode)
            table.setflags(write=False)  # shared by every image
            self._tables[key] = table
        return self._tables[key]


class ColorBarView(pg.GraphicsLayoutWidget):
    """The one colour bar beside a set of maps.

    Every ImageItem registered with ``set_items`` takes its colour map and
    levels from this bar, so what is drawn always matches what is labelled.
    """

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("color_bar")
        self.setBackground(None)
        # nothing is drawn behind the bar: a cached background kept the light theme's after a
        # switch to dark, and the numbers, now in light ink, vanished on it
        self.setCacheMode(QGraphicsView.CacheModeFlag.CacheNone)
        self.setFixedWidth(COLOR_BAR_PX)
        self.bar = pg.ColorBarItem(interactive=False, colorMapMenu=False, width=16)
        self.addItem(self.bar)
        self._colormap = ""
        self._value_name: str | None = None  # the bar's axis title, as last set
        self._titles: tuple[str, ...] = ()  # the title, then a shorter one for a short bar
        ink_axes(self._axes(), self)
        self._fit_width()
        # a shorter bar may hold only the shorter title
        self.bar.getAxis("left").geometryChanged.connect(self._label_axis)

    def _axes(self):
        return [self.bar.getAxis(name) for name in ("left", "bottom", "right", "top")]

    def set_items(self, items) -> None:
        self.bar.setImageItem(list(items))

    def show_scale(self, maps: StageMaps) -> None:
        if maps.colormap != self._colormap:  # a new LUT is pushed to every item
            self._colormap = maps.colormap
            self.bar.setColorMap(_TablesOnce(maps.colormap))
        # Unchanged levels and name are left alone: the items already got the levels
        # from setImage, and each call would re-render the bar's axis on every step.
        if tuple(self.bar.levels()) != tuple(maps.levels):
            self.bar.setLevels(maps.levels)
        titles = (maps.bar_title, maps.value_name)  # the caption says what is clipped
        if titles != self._titles:
            self._titles = titles
            self._label_axis()

    def _label_axis(self) -> None:
        """The bar's title in the widget's own type (pyqtgraph's default is small): the
        title's own font, not a size in its markup, so whoever reads the item reads the type
        it is drawn in. The longest title that the bar's height holds whole."""
        if not self._titles:
            return
        metrics = self.fontMetrics()
        room = self.bar.getAxis("left").geometry().height() - 4  # the title is centred on it
        title = next((t for t in self._titles if metrics.horizontalAdvance(t) <= room), self._titles[-1])
        if title != self._value_name:
            self._value_name = title
            axis = self.bar.getAxis("left")
            axis.label.setFont(QFont(self.font()))
            axis.setLabel(title)
            axis.resizeEvent()  # pyqtgraph centres its title only as the axis is resized
            self.setToolTip(self._titles[0] if title != self._titles[0] else "")

    def drawn_texts(self) -> list[DrawnText]:
        """The bar's numbers and its title."""
        if not self.isVisible():
            return []
        ground = ground_of(self)
        texts = []
        for axis in self._axes():
            texts += axis_texts(axis, self, "colour bar", ground)
            texts += axis_title(axis, self, "colour bar", ground, role="bar")
        return texts

    def drawn_shapes(self) -> list[DrawnShape]:
        return map_shape(self, self.bar.vb, "colour bar", "colour bar")

    def _fit_width(self) -> None:
        """Room for the bar, its numbers and its title at the current type: a fixed
        width dropped every number but "0" at projector type."""
        metrics = self.fontMetrics()
        numbers = metrics.horizontalAdvance("-0.00") + 12  # pyqtgraph drops a number wider
        for axis in self._axes():  # than its axis, and measures only what it drew
            if axis.style["showValues"] and axis.orientation in ("left", "right"):
                axis.setWidth(numbers)
        self.setFixedWidth(max(COLOR_BAR_PX, 16 + numbers + metrics.height() + 4))
        # the numbers at the bar's ends are centred on them: half a line of room beyond each
        # end keeps them whole (the bottom "0" was cut at projector type)
        end = metrics.height() / 2 + 2
        self.ci.setContentsMargins(1, end, 1, end)

    def changeEvent(self, event) -> None:
        bar = getattr(self, "bar", None)  # GraphicsView's own __init__ changes the palette
        if event.type() == QEvent.Type.PaletteChange and bar is not None:
            ink_axes(self._axes(), self)
        if event.type() == QEvent.Type.FontChange and bar is not None:
            self._fit_width()
            self._value_name = None  # set again in the new type
            self._label_axis()
        super().changeEvent(event)
