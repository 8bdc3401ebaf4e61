"""All layers at a glance: one thumbnail per (layer, head), layers as rows.

The thumbnails are coloured once when maps arrive (viridis, weights 0 to 1, as
the heads panel colours softmax weights) and only blitted when painting. A click,
or Enter on the keyboard-selected cell, emits ``head_chosen(layer, head)`` with
the layer 1-based and the head 0-based, as the window labels them.

The heads' and layers' names are thinned to every k-th where a thumbnail is narrower than
its name ("h0 h2 h4 …", never "h0h1h2" run together); a head's badge goes on a line under its
thumbnail, never over the map, where the thumbnails are large enough to spare it. Every text
painted is listed once (``texts``), for the painting and for the picture checks alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QPoint, QRect, QRectF, QSize, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFontMetricsF,
    QImage,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPalette,
    QPen,
)
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from mha_explorer.core.display.token_ticks import label_step, spaced_positions
from mha_explorer.qt.colormaps import lookup_table
from mha_explorer.qt.drawn import in_window, painted_text
from mha_explorer.qt.picture import DrawnShape, DrawnText
from mha_explorer.qt.trained.head_picking import PicksAHead

LABEL_PX = 28  # at least this much room for the "L1" row labels and the "h0" column labels
GAP_PX = 3
MIN_SIDE_PX = 4  # a thumbnail's least side: the colour still reads as a dot
LABEL_GAP_PX = 6  # air between two names side by side
BADGE_MIN_CELL_PX = 44  # below this a thumbnail keeps all its room; the badge is on hover
CURRENT_PEN = QPen(QColor("#D55E00"), 2.5)  # vermillion, as the heads panel marks a choice
CENTRE = int(Qt.AlignmentFlag.AlignCenter)


@dataclass(frozen=True)
class GridText:
    """One text the grid paints, in ``box`` (its pixels), centred."""

    text: str
    box: QRectF


def map_image(index: np.ndarray, lut: np.ndarray) -> QImage:
    """An attention map as an image: ``index`` [T, S] uint8 (weight × 255) through ``lut``."""
    rgb = np.ascontiguousarray(lut[index])  # [T, S, 3]
    h, w = index.shape
    return QImage(rgb.data, w, h, 3 * w, QImage.Format.Format_RGB888).copy()  # owns its pixels


class LayerGrid(PicksAHead, QWidget):
    """A layers × heads grid of attention-map thumbnails.

    ``set_maps(maps [L, H, T, S] in 0..1, badges)``; ``set_current(layer, head)``;
    signal ``head_chosen(layer: int 1-based, head: int 0-based)``.
    """

    head_chosen = Signal(int, int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setAccessibleName("All layers' attention maps")
        self._lut = lookup_table()
        self._images: list[list[QImage]] = []
        self._badges: list[list[str]] = []
        self._current: tuple[int, int] | None = None  # (layer 1-based, head 0-based)
        self._kinds: tuple[str, ...] = ()  # "local" / "global" per layer, when both occur
        self._measured: tuple[tuple, tuple[int, int, int, int, int]] | None = None  # (key, _layout())

    # Data ------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        """(layers, heads) shown; (0, 0) before any maps."""
        return (len(self._images), len(self._images[0]) if self._images else 0)

    def set_maps(self, maps: np.ndarray, badges: list[list[str]] | None = None,
                 layer_kinds: tuple[str, ...] = ()) -> None:
        """maps [L, H, T, S] of attention weights; badges[l][h] short texts such as "prev 0.98";
        ``layer_kinds`` "local" or "global" per layer, when the model has both (the local rows'
        labels are marked, so a sliding-window layer reads apart from a global one)."""
        self._kinds = tuple(layer_kinds) if len(set(layer_kinds)) > 1 else ()
        maps = np.asarray(maps, dtype=np.float32)
        if maps.ndim != 4:
            raise ValueError(f"maps must be [layers, heads, T, S], got shape {maps.shape}")
        index = np.clip(np.rint(maps * 255), 0, 255).astype(np.uint8)  # [L, H, T, S]
        self._images = [[self._image(index[layer, h]) for h in range(maps.shape[1])]
                        for layer in range(maps.shape[0])]
        self._badges = badges or [[""] * maps.shape[1] for _ in range(maps.shape[0])]
        self._measured = None
        if self._current is not None and not self._valid(*self._current):
            self._current = None
        self.updateGeometry()
        self.update()

    def clear(self) -> None:
        """No maps: those shown belonged to another model or text."""
        self._images, self._badges, self._kinds, self._current = [], [], (), None
        self._measured = None
        self.updateGeometry()
        self.update()

    def _image(self, index: np.ndarray) -> QImage:
        return map_image(index, self._lut)

    def set_current(self, layer: int, head: int) -> None:
        self._current = (layer, head) if self._valid(layer, head) else None
        self.update()

    def current(self) -> tuple[int, int] | None:
        return self._current

    def _valid(self, layer: int, head: int) -> bool:
        layers, heads = self.shape
        return 1 <= layer <= layers and 0 <= head < heads

    # Geometry --------------------------------------------------------------
    def _layer_name(self, layer: int) -> str:
        local = self._kinds and self._kinds[layer - 1] == "local"
        return f"L{layer}" + ("·w" if local else "·G" if self._kinds else "")

    def _left_px(self) -> int:
        """Room for the row labels: "L18·G" in the widget's own type, never cut."""
        layers, _heads = self.shape
        widest = f"L{max(layers, 1)}" + ("·G" if self._kinds else "")
        return max(LABEL_PX, self.fontMetrics().horizontalAdvance(widest) + 6)

    def _top_px(self) -> int:
        """Room for the heads' names over the thumbnails, in the widget's own type."""
        return max(LABEL_PX, self.fontMetrics().height() + 6)

    def _fit(self, below: int) -> int:
        """The thumbnails' side when each row keeps ``below`` pixels under them."""
        layers, heads = self.shape
        if not layers:
            return 0
        w = (self.width() - self._left_px()) // heads - GAP_PX
        h = (self.height() - self._top_px()) // layers - GAP_PX - below
        return max(MIN_SIDE_PX, min(w, h))

    def _badge_px(self) -> int:
        """A line under every thumbnail for its badge, where they are large enough to spare it."""
        line = self.fontMetrics().height()
        shown = any(any(row) for row in self._badges)
        return line if shown and self._fit(line) >= BADGE_MIN_CELL_PX else 0

    def _cell_px(self) -> int:
        return self._fit(self._badge_px())

    def _layout(self) -> tuple[int, int, int, int, int]:
        """(left, top, side, across, down): where the thumbnails start, their side, and the
        pitch from one to the next. Measured once per size, type and maps: a paint asks for
        every cell's place, and measuring the type for each held a theme switch 100 ms."""
        key = (self.width(), self.height(), self.font().key())
        if self._measured is None or self._measured[0] != key:
            size, badge = self._cell_px(), self._badge_px()
            self._measured = (key, (self._left_px(), self._top_px(), size, size + GAP_PX,
                                    size + GAP_PX + badge))
        return self._measured[1]

    def _pitch(self) -> tuple[int, int]:
        """(across, down): from one thumbnail to the next."""
        return self._layout()[3:]

    def cell_rect(self, layer: int, head: int) -> QRect:
        """Where the thumbnail of (layer 1-based, head 0-based) is drawn."""
        left, top, size, across, down = self._layout()
        return QRect(left + head * across, top + (layer - 1) * down, size, size)

    def cell_at(self, point: QPoint) -> tuple[int, int] | None:
        left, top, size, across, down = self._layout()
        if not size:
            return None
        col, row = (point.x() - left) // across, (point.y() - top) // down
        if point.x() < left or point.y() < top or not self._valid(row + 1, col):
            return None
        return (row + 1, col) if self.cell_rect(row + 1, col).contains(point) else None

    def sizeHint(self) -> QSize:
        layers, heads = self.shape if self._images else (6, 12)  # a typical grid before any maps
        return QSize(self._left_px() + max(heads, 1) * 64, self._top_px() + max(layers, 1) * 64)

    def minimumSizeHint(self) -> QSize:
        # every layer's row at least MIN_SIDE_PX tall: a model with many layers is not drawn
        # past the grid's lower edge
        layers = self.shape[0]
        return QSize(self._left_px() + 12 * 16,
                     self._top_px() + max(6 * 16, layers * (MIN_SIDE_PX + GAP_PX)))

    def texts(self) -> list[GridText]:
        """Every text the grid paints: the heads' names over the columns and the layers' beside
        the rows (every k-th where a name is wider than its thumbnail), and the badges that fit."""
        layers, heads = self.shape
        if not layers:
            return []
        metrics = QFontMetricsF(self.font())
        across, down = self._pitch()
        texts = []
        name_w = metrics.horizontalAdvance(f"h{heads - 1}") + LABEL_GAP_PX
        for head in spaced_positions(heads, label_step(heads, name_w, heads * across)):
            centre = self.cell_rect(1, head).center().x() + 0.5
            left = min(max(centre - name_w / 2, 0.0), self.width() - name_w)  # never past the edge
            texts.append(GridText(f"h{head}", QRectF(left, 0, name_w, self._top_px())))
        line = metrics.height() + 1
        for layer in spaced_positions(layers, label_step(layers, line, layers * down)):
            r = self.cell_rect(layer + 1, 0)
            middle = r.y() + r.height() / 2
            tall = max(r.height(), line)
            # a name taller than its row stays inside the grid, as the heads' names do across it
            top = min(max(middle - tall / 2, 0.0), self.height() - tall)
            box = QRectF(0, top, self._left_px(), tall)
            texts.append(GridText(self._layer_name(layer + 1), box))
        below = self._badge_px()
        for layer in range(1, layers + 1) if below else ():
            for head in range(heads):
                rect = QRectF(self.cell_rect(layer, head))
                # the whole badge, else its pattern's name alone ("prev"), else none (hover)
                fits = [t for t in (self._badges[layer - 1][head],
                                    self._badges[layer - 1][head].split(" ")[0])
                        if t and metrics.horizontalAdvance(t) + 2 <= rect.width() + GAP_PX]
                if fits:
                    box = QRectF(rect.x() - GAP_PX / 2, rect.bottom() + 1, rect.width() + GAP_PX, below)
                    texts.append(GridText(fits[0], box))
        return texts

    # Painting and input ----------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        layers, heads = self.shape
        for layer in range(1, layers + 1):
            for head in range(heads):
                painter.drawImage(self.cell_rect(layer, head), self._images[layer - 1][head])
        painter.setPen(self.palette().color(QPalette.ColorRole.WindowText))
        for item in self.texts():
            painter.drawText(item.box, CENTRE, item.text)
        if self._current is not None:
            painter.setPen(CURRENT_PEN)
            painter.drawRect(self.cell_rect(*self._current).adjusted(-1, -1, 1, 1))
        painter.end()

    # What a picture check reads --------------------------------------------------------
    def drawn_texts(self) -> list[DrawnText]:
        if not self.isVisible():
            return []
        return [painted_text(self, t.text, t.box, "layers grid", flags=CENTRE) for t in self.texts()]

    def drawn_shapes(self) -> list[DrawnShape]:
        layers, heads = self.shape
        return [DrawnShape(in_window(self, QRectF(self.cell_rect(layer, head))), "layers grid",
                           f"layer {layer} head {head}", "map")
                for layer in range(1, layers + 1) for head in range(heads)] if self.isVisible() else []

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        cell = self.cell_at(event.position().toPoint())
        if cell is not None:
            layer, head = cell
            badge = self._badges[layer - 1][head]
            kind = f" ({self._kinds[layer - 1]})" if self._kinds else ""
            text = f"layer {layer}{kind}, head {head}" + (f": {badge}" if badge else "")
            QToolTip.showText(event.globalPosition().toPoint(), text, self)
        super().mouseMoveEvent(event)
