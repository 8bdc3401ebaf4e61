"""One heatmap with its title and footer: a cell of the grid, or the big map of
the head dialog.

The ImageItem is created once and refreshed with setImage: row-major,
C-contiguous float32 and explicit levels, so pyqtgraph neither transposes nor
scans the data for a range. The colour map comes from whoever owns the colour
bar (color_bar.py), so every cell of a grid is coloured by the same bar; the
words of the title and footer, and their shorter forms, are cell_words.py's.
"""

from __future__ import annotations

import html
import math

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QPalette, QPen
from PySide6.QtWidgets import (
    QFrame,
    QGraphicsRectItem,
    QGraphicsView,
    QLabel,
    QSizePolicy,
    QVBoxLayout,
)

from mha_explorer.core.display.head_maps import HeatMap, StageMaps
from mha_explorer.qt.drawn import axis_texts, ground_of, map_shape, visible_part
from mha_explorer.qt.heads.cell_words import footer_forms, html_width, plain_text, title_forms
from mha_explorer.qt.heads.map_image import AUTO_DOWNSAMPLE_PIXELS, MapImage
from mha_explorer.qt.heads.token_axis import TokenAxis
from mha_explorer.qt.picture import DrawnShape, DrawnText

MASK_BASE = QColor("#3b3b3b")  # masked cells: dark, far from every colour of both maps
MASK_HATCH = QColor("#8c8c8c")
BOUNDARY_PEN = pg.mkPen("#202020", width=1.5, style=Qt.PenStyle.DashLine)
MARK_PEN = pg.mkPen("#D55E00", width=2.5)  # the dialog's chosen query row


def ink_axes(axes, widget) -> None:
    """Axes in the widget's text colour: readable on light, dark and projector themes."""
    ink = widget.palette().color(QPalette.ColorRole.WindowText)
    for axis in axes:
        axis.setPen(ink)
        axis.setTextPen(ink)


class _MapView(pg.GraphicsView):
    """The map of a cell: a ViewBox with a token axis left and below, nothing more.

    No PlotItem: its context menu alone (a few hundred widgets) cost more than
    everything a cell needs, and a grid builds one cell per head. The view's
    own grid layout holds the three items; the ViewBox has no menu. In the
    grid the wheel is left to the scroll area; only the dialog zooms.
    """

    def __init__(self, zoomable: bool, parent=None) -> None:
        super().__init__(parent, background=None)
        # nothing is drawn behind the items, so a cached background would only hold memory
        self.setCacheMode(QGraphicsView.CacheModeFlag.CacheNone)
        self._zoomable = zoomable
        self.vb = pg.ViewBox(enableMouse=zoomable, enableMenu=False, invertY=True,
                             defaultPadding=0.0)  # invertY: row 0 at the top, as a matrix
        self.left_axis = TokenAxis("left")
        self.bottom_axis = TokenAxis("bottom")
        grid = self.centralLayout
        grid.setContentsMargins(1, 1, 1, 1)  # as a PlotItem's
        grid.setSpacing(0)
        grid.addItem(self.left_axis, 0, 0)
        grid.addItem(self.vb, 0, 1)
        grid.addItem(self.bottom_axis, 1, 1)
        for axis in (self.left_axis, self.bottom_axis):
            axis.linkToView(self.vb)

    def set_axes_shown(self, shown: bool) -> None:
        """With the axes, or the map alone (a small map beside a large one, whose own axes
        name the tokens): out of the layout, so the map takes their room."""
        grid = self.centralLayout
        for axis, (row, col) in ((self.left_axis, (0, 0)), (self.bottom_axis, (1, 1))):
            placed = any(grid.itemAt(i) is axis for i in range(grid.count()))
            if shown and not placed:
                grid.addItem(axis, row, col)
                axis.show()
            elif not shown and placed:
                grid.removeItem(axis)
                axis.hide()

    def set_bottom_shown(self, shown: bool) -> None:
        """The axis under the map, or none (its names drawn elsewhere)."""
        grid = self.centralLayout
        placed = any(grid.itemAt(i) is self.bottom_axis for i in range(grid.count()))
        if shown and not placed:
            grid.addItem(self.bottom_axis, 1, 1)
            self.bottom_axis.show()
        elif not shown and placed:
            grid.removeItem(self.bottom_axis)
            self.bottom_axis.hide()

    def wheelEvent(self, event) -> None:
        if self._zoomable:
            super().wheelEvent(event)
        else:
            event.ignore()


class HeatmapCell(QFrame):
    """Title, map and footer for one HeatMap.

    ``hovered(row, col)`` and ``clicked(row, col)`` give the cell under the
    mouse in tensor positions (row is absolute: a windowed map starting at
    query 256 reports 256 for its first row); ``left()`` when the mouse leaves;
    ``activated()`` on click, Enter or Space.
    """

    hovered = Signal(int, int)
    left = Signal()
    clicked = Signal(int, int)
    activated = Signal()

    def __init__(self, *, zoomable: bool = False, parent=None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.title = QLabel(self, textFormat=Qt.TextFormat.RichText)
        self.footer = QLabel(self, textFormat=Qt.TextFormat.PlainText)
        for label in (self.title, self.footer):  # the cell's width chooses their words (_place_footer)
            label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.view = _MapView(zoomable, self)
        self.view.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.view.setMinimumSize(8, 8)  # a small cell squeezes its map, never its words
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.setSpacing(1)
        layout.addWidget(self.title)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.footer)

        self.vb = self.view.vb
        self.left_axis: TokenAxis = self.view.left_axis
        self.bottom_axis: TokenAxis = self.view.bottom_axis

        # Masked cells are NaN, which ImageItem leaves transparent: this hatch shows through.
        self.mask_base = QGraphicsRectItem()
        self.mask_base.setBrush(QBrush(MASK_BASE))
        self.mask_hatch = QGraphicsRectItem()
        self.mask_hatch.setBrush(QBrush(MASK_HATCH, Qt.BrushStyle.BDiagPattern))
        for z, item in enumerate((self.mask_base, self.mask_hatch)):
            item.setPen(QPen(Qt.PenStyle.NoPen))
            item.setZValue(-2 + z)
            self.vb.addItem(item, ignoreBounds=True)  # the range is always set explicitly
        self.image = MapImage(axisOrder="row-major")
        self.vb.addItem(self.image)
        self.mark = QGraphicsRectItem()
        self.mark.setPen(MARK_PEN)
        self.mark.setVisible(False)
        self.mark.setZValue(10)
        self.vb.addItem(self.mark, ignoreBounds=True)
        self._lines: list[pg.InfiniteLine] = []
        self._extent = (0, 0, 0)  # first row, rows, cols of what is drawn
        self._axes = ("", "")  # what the rows and columns drawn hold (MapAxes's kinds)
        self._title_forms = [""]  # the title, then shorter forms of it (title_forms)
        self._widest = [""]  # the same forms of the widest title among the cell's neighbours
        self._footer_text = ""  # the whole footer; the label may hold a short form
        self._apply_palette()

        scene = self.view.scene()
        scene.sigMouseMoved.connect(self._on_mouse_moved)
        scene.sigMouseClicked.connect(self._on_mouse_clicked)

    # drawing -----------------------------------------------------------------
    def show_map(self, heatmap: HeatMap, maps: StageMaps) -> None:
        image = heatmap.image
        rows, cols = image.shape
        self._axes = (maps.row_kind, maps.col_kind)
        self._title_forms = title_forms(heatmap)
        self._widest = title_forms(maps.maps[-1])  # the last head: the longest numbers
        self._footer_text = heatmap.footer
        self._place_footer()
        self.image.setImage(image, levels=maps.levels,
                            autoDownsample=image.size > AUTO_DOWNSAMPLE_PIXELS)
        self.mask_base.setVisible(maps.masked)  # a hatch fill costs time on every paint
        self.mask_hatch.setVisible(maps.masked)
        first = maps.row_start
        if self._extent != (first, rows, cols):
            self._extent = (first, rows, cols)
            # cell centres on whole numbers: column j spans j - 0.5 .. j + 0.5
            rect = QRectF(-0.5, first - 0.5, cols, rows)
            self.image.setRect(rect)
            self.mask_base.setRect(rect)
            self.mask_hatch.setRect(rect)
            # limits first: the old ones would clamp the new range
            self.vb.setLimits(xMin=rect.left(), xMax=rect.right(),
                              yMin=rect.top(), yMax=rect.bottom())
            self.vb.setRange(rect=rect, padding=0.0)
        # The axes size their text space for what they will draw; placed at once,
        # not after a first paint at the old size. The view first (a footer shown
        # or hidden changes its height), then the bottom axis: its height sets the
        # length of the left one, which decides between names and positions.
        self.layout().activate()
        self.bottom_axis.set_labels(maps.col_labels if maps.col_kind == "key" else (), 0, cols)
        self.view.centralLayout.activate()
        self.left_axis.set_labels(maps.row_labels, first, rows)
        self.view.centralLayout.activate()
        self._set_lines(maps.column_lines)

    def _room(self) -> float:
        """The width the cell's words have: inside its frame and margins."""
        margins = self.layout().contentsMargins()
        return self.width() - margins.left() - margins.right() - 2 * self.frameWidth()

    def _place_footer(self) -> None:
        """The title and footer, whole where they fit and shorter where they would be cut
        (``title_forms``, ``footer_forms``), never cut: the footer on the title's line when
        both fit (a line of height more for the map), else on a line of its own; whatever
        is shortened or left out is said whole by the title's hover."""
        room = self._room()
        font = self.title.font()
        titles, footers = self._title_forms, footer_forms(self._footer_text)
        # every cell of a grid shortens its title alike: the form the widest title fits in
        level = next((i for i, t in enumerate(self._widest) if html_width(t, font) <= room),
                     len(self._widest) - 1)
        title = titles[min(level, len(titles) - 1)]
        beside = next((f for f in footers if f and html_width(
            f"{titles[0]} · {html.escape(f)}", font) <= room), "")
        line = "" if beside else next(
            (f for f in footers if self.footer.fontMetrics().horizontalAdvance(f) + 4 <= room), "")
        self.title.setText(f"{titles[0]} · {html.escape(beside)}" if beside else title)
        self.title.setVisible(bool(beside or title))  # none fits: the map takes its line
        self.footer.setText(line)
        self.footer.setVisible(bool(line))
        whole = plain_text(titles[0])
        said = (beside or line) == self._footer_text and (beside or title == titles[0])
        self.title.setToolTip("" if said else " · ".join(filter(None, [whole, self._footer_text])))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._place_footer()  # the words that fit the new width

    def _set_lines(self, positions: tuple[float, ...]) -> None:
        while len(self._lines) < len(positions):
            line = pg.InfiniteLine(angle=90, pen=BOUNDARY_PEN, movable=False)
            self.vb.addItem(line)
            self._lines.append(line)
        for i, line in enumerate(self._lines):
            visible = i < len(positions)
            line.setVisible(visible)
            if visible:
                line.setValue(positions[i])

    def mark_row(self, row: int | None) -> None:
        """Outline one row (the dialog's chosen query); None hides the outline."""
        first, rows, cols = self._extent
        if row is None or not first <= row < first + rows:
            self.mark.setVisible(False)
            return
        self.mark.setRect(QRectF(-0.5, row - 0.5, cols, 1))
        self.mark.setVisible(True)

    def clear(self, message: str = "") -> None:
        self.image.clear()
        self._title_forms = self._widest = [html.escape(message)]
        self.title.setText(self._title_forms[0])
        self.title.setToolTip("")
        self.title.show()
        self._footer_text = ""
        self.footer.clear()
        self._set_lines(())
        self.mark.setVisible(False)

    def _apply_palette(self) -> None:
        ink_axes((self.left_axis, self.bottom_axis), self)

    def changeEvent(self, event) -> None:
        if event.type() == QEvent.Type.PaletteChange:  # projector / dark theme switch
            self._apply_palette()
        super().changeEvent(event)

    # pointer and keyboard ------------------------------------------------------
    def cell_at(self, scene_pos) -> tuple[int, int] | None:
        """(row, col) under a scene position, or None outside the image."""
        if self.image.image is None or not self.vb.sceneBoundingRect().contains(scene_pos):
            return None
        p = self.vb.mapSceneToView(scene_pos)
        row, col = math.floor(p.y() + 0.5), math.floor(p.x() + 0.5)
        first, rows, cols = self._extent
        if first <= row < first + rows and 0 <= col < cols:
            return row, col
        return None

    def _on_mouse_moved(self, scene_pos) -> None:
        where = self.cell_at(scene_pos)
        if where is None:
            self.left.emit()
        else:
            self.hovered.emit(*where)

    def _on_mouse_clicked(self, event) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        where = self.cell_at(event.scenePos())
        if where is not None:
            self.clicked.emit(*where)
        self.activated.emit()

    def leaveEvent(self, event) -> None:
        self.left.emit()
        super().leaveEvent(event)

    def keyPressEvent(self, event) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
            self.activated.emit()
        else:
            super().keyPressEvent(event)

    # what a picture check reads (the title and footer are labels: Qt itself says them) --------
    def _owner(self) -> str:
        return "heads: " + (plain_text(self._title_forms[0]) or "map")

    def drawn_texts(self) -> list[DrawnText]:
        """The tick labels of both axes: token names, or the positions and dims they count;
        those the grid's scroll area holds out of sight are not in the picture now."""
        if not self.isVisible():
            return []
        owner, ground, shown = self._owner(), ground_of(self), visible_part(self)
        return [t for t in (*axis_texts(self.left_axis, self.view, owner, ground),
                            *axis_texts(self.bottom_axis, self.view, owner, ground))
                if shown.contains(t.rect)]

    def drawn_shapes(self) -> list[DrawnShape]:
        if not self.isVisible() or self.image.image is None:
            return []
        return map_shape(self.view, self.vb, self._owner(), self._owner().removeprefix("heads: "),
                         self._axes)
