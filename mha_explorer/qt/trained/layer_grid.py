"""All layers at a glance: one thumbnail per (layer, head), layers as rows.

The thumbnails are coloured once when maps arrive (viridis, weights 0 to 1, as
the heads panel colours softmax weights) and only blitted when painting. A click,
or Enter on the keyboard-selected cell, emits ``head_chosen(layer, head)`` with
the layer 1-based and the head 0-based, as the window labels them.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QImage, QKeyEvent, QMouseEvent, QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from mha_explorer.qt.colormaps import lookup_table

LABEL_PX = 28  # room for the "L1" row labels and the "h0" column labels
GAP_PX = 3
BADGE_MIN_CELL_PX = 44  # below this a thumbnail has no room for its badge
CURRENT_PEN = QPen(QColor("#D55E00"), 2.5)  # vermillion, as the heads panel marks a choice


def map_image(index: np.ndarray, lut: np.ndarray) -> QImage:
    """An attention map as an image: ``index`` [T, S] uint8 (weight × 255) through ``lut``."""
    rgb = np.ascontiguousarray(lut[index])  # [T, S, 3]
    h, w = index.shape
    return QImage(rgb.data, w, h, 3 * w, QImage.Format.Format_RGB888).copy()  # owns its pixels


class LayerGrid(QWidget):
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
        if self._current is not None and not self._valid(*self._current):
            self._current = None
        self.updateGeometry()
        self.update()

    def clear(self) -> None:
        """No maps: those shown belonged to another model or text."""
        self._images, self._badges, self._kinds, self._current = [], [], (), None
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
    def _left_px(self) -> int:
        """Room for the row labels: "L18·G" in the widget's own type, never cut."""
        layers, _heads = self.shape
        widest = f"L{max(layers, 1)}" + ("·G" if self._kinds else "")
        return max(LABEL_PX, self.fontMetrics().horizontalAdvance(widest) + 6)

    def _cell_px(self) -> int:
        layers, heads = self.shape
        if not layers:
            return 0
        w = (self.width() - self._left_px()) // heads - GAP_PX
        h = (self.height() - LABEL_PX) // layers - GAP_PX
        return max(4, min(w, h))

    def cell_rect(self, layer: int, head: int) -> QRect:
        """Where the thumbnail of (layer 1-based, head 0-based) is drawn."""
        size = self._cell_px()
        step = size + GAP_PX
        return QRect(self._left_px() + head * step, LABEL_PX + (layer - 1) * step, size, size)

    def cell_at(self, point: QPoint) -> tuple[int, int] | None:
        size = self._cell_px()
        if not size:
            return None
        step = size + GAP_PX
        left = self._left_px()
        col, row = (point.x() - left) // step, (point.y() - LABEL_PX) // step
        if point.x() < left or point.y() < LABEL_PX or not self._valid(row + 1, col):
            return None
        return (row + 1, col) if self.cell_rect(row + 1, col).contains(point) else None

    def sizeHint(self) -> QSize:
        layers, heads = self.shape if self._images else (6, 12)  # a typical grid before any maps
        return QSize(self._left_px() + max(heads, 1) * 64, LABEL_PX + max(layers, 1) * 64)

    def minimumSizeHint(self) -> QSize:
        return QSize(self._left_px() + 12 * 16, LABEL_PX + 6 * 16)

    # Painting and input ----------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        ink = self.palette().color(QPalette.ColorRole.WindowText)
        painter.setPen(ink)
        layers, heads = self.shape
        size = self._cell_px()
        for head in range(heads):
            r = self.cell_rect(1, head)
            painter.drawText(QRect(r.x(), 0, r.width(), LABEL_PX), Qt.AlignmentFlag.AlignCenter, f"h{head}")
        for layer in range(1, layers + 1):
            r = self.cell_rect(layer, 0)
            painter.setPen(ink)  # badges paint white; labels are in the text colour
            local = self._kinds and self._kinds[layer - 1] == "local"
            painter.drawText(QRect(0, r.y(), self._left_px(), r.height()), Qt.AlignmentFlag.AlignCenter,
                             f"L{layer}" + ("·w" if local else "·G" if self._kinds else ""))
            for head in range(heads):
                rect = self.cell_rect(layer, head)
                painter.drawImage(rect, self._images[layer - 1][head])
                badge = self._badges[layer - 1][head]
                if badge and size >= BADGE_MIN_CELL_PX:
                    self._draw_badge(painter, rect, badge)
        if self._current is not None:
            painter.setPen(CURRENT_PEN)
            painter.drawRect(self.cell_rect(*self._current).adjusted(-1, -1, 1, 1))
        painter.end()

    def _draw_badge(self, painter: QPainter, rect: QRect, text: str) -> None:
        band = QRect(rect.x(), rect.bottom() - 13, rect.width(), 14)
        painter.fillRect(band, QColor(0, 0, 0, 170))
        painter.setPen(QColor("#ffffff"))
        painter.drawText(band, Qt.AlignmentFlag.AlignCenter, text)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        cell = self.cell_at(event.position().toPoint())
        if cell is None:
            return super().mousePressEvent(event)
        self.set_current(*cell)
        self.head_chosen.emit(*cell)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        cell = self.cell_at(event.position().toPoint())
        if cell is not None:
            layer, head = cell
            badge = self._badges[layer - 1][head]
            kind = f" ({self._kinds[layer - 1]})" if self._kinds else ""
            text = f"layer {layer}{kind}, head {head}" + (f": {badge}" if badge else "")
            QToolTip.showText(event.globalPosition().toPoint(), text, self)
        super().mouseMoveEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        layers, heads = self.shape
        if not layers:
            return super().keyPressEvent(event)
        layer, head = self._current or (1, 0)
        moves = {Qt.Key.Key_Left: (0, -1), Qt.Key.Key_Right: (0, 1),
                 Qt.Key.Key_Up: (-1, 0), Qt.Key.Key_Down: (1, 0)}
        if event.key() in moves:
            dl, dh = moves[event.key()]
            self.set_current(min(max(layer + dl, 1), layers), min(max(head + dh, 0), heads - 1))
        elif event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
            self.set_current(layer, head)
            self.head_chosen.emit(layer, head)
        else:
            super().keyPressEvent(event)
