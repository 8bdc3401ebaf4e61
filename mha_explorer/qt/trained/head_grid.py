"""One number per head as a layers × heads grid of coloured cells, each with its number written
in it: a head's induction score, the loss with it switched off, the fraction patching it recovers.

``set_values(values [layers, H], colour map, low, high)`` colours each cell by where its value
lies between ``low`` and ``high`` (clipped) and writes it with ``decimals`` where a row is as tall
as the type (a deep model's every layer in a short dock keeps its colours, its numbers on
hover, rather than half its rows scrolled out of sight); a click, or Enter on
the keyboard's cell, emits ``head_chosen(layer 1-based, head 0-based)``.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPoint, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QMouseEvent, QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from mha_explorer.core.display.colors import WEIGHTS_COLORMAP, ink_on
from mha_explorer.qt.colormaps import lookup_table
from mha_explorer.qt.trained.head_picking import PicksAHead

CURRENT_PEN = QPen(QColor("#D55E00"), 2.5)  # vermillion, as the layers grid marks a choice
MIN_CELL_PX = (44, 5)  # a cell still holds "-0.47" in small type, and a row (5 px) still shows its colour


class HeadGrid(PicksAHead, QWidget):
    head_chosen = Signal(int, int)

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = title
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setAccessibleName(title)
        self.values: np.ndarray | None = None  # [layers, H]
        self._colors: list[list[QColor]] = []
        self._decimals = 2
        self._kinds: tuple[str, ...] = ()
        self._current: tuple[int, int] | None = None

    def set_values(self, values: np.ndarray, colormap: str = WEIGHTS_COLORMAP, low: float = 0.0,
                   high: float = 1.0, decimals: int = 2, layer_kinds: tuple[str, ...] = ()) -> None:
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 2:
            raise ValueError(f"values must be [layers, heads], got shape {values.shape}")
        span = high - low if high > low else 1.0
        index = np.clip(np.rint((values - low) / span * 255), 0, 255).astype(int)  # [layers, H]
        lut = lookup_table(colormap)
        self._colors = [[QColor(*(int(c) for c in lut[i])) for i in row] for row in index]
        self.values, self._decimals = values, decimals
        self._kinds = tuple(layer_kinds) if len(set(layer_kinds)) > 1 else ()
        self.updateGeometry()
        self.update()

    def clear(self) -> None:
        self.values, self._colors, self._current = None, [], None
        self.update()

    @property
    def shape(self) -> tuple[int, int]:
        return (0, 0) if self.values is None else self.values.shape

    def current(self) -> tuple[int, int] | None:
        return self._current

    def set_current(self, layer: int, head: int) -> None:
        layers, heads = self.shape
        self._current = (layer, head) if 1 <= layer <= layers and 0 <= head < heads else None
        self.update()

    # geometry -------------------------------------------------------------------------------
    def _margins(self) -> tuple[float, float]:
        """(left, top): room for "L18·G" beside the rows, the title and "h0" above the columns."""
        fm = self.fontMetrics()
        layers = max(self.shape[0], 1)
        left = fm.horizontalAdvance(f"L{layers}" + ("·G" if self._kinds else "")) + 8
        return float(left), float(2 * fm.lineSpacing() + 4)

    def cell_rect(self, layer: int, head: int) -> QRectF:
        left, top = self._margins()
        layers, heads = self.shape
        w = (self.width() - left) / max(heads, 1)
        h = (self.height() - top) / max(layers, 1)
        return QRectF(left + head * w, top + (layer - 1) * h, w, h)

    def cell_at(self, point: QPoint) -> tuple[int, int] | None:
        left, top = self._margins()
        layers, heads = self.shape
        if not layers or point.x() < left or point.y() < top:
            return None
        first = self.cell_rect(1, 0)
        layer, head = int((point.y() - top) // first.height()) + 1, int((point.x() - left) // first.width())
        return (layer, head) if layer <= layers and head < heads else None

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        left, top = self._margins()
        layers, heads = self.shape if self.values is not None else (18, 4)
        return QSize(int(left + heads * 56), int(top + layers * 22))

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        left, top = self._margins()
        layers, heads = self.shape if self.values is not None else (18, 4)
        fm = self.fontMetrics()
        cell_w = max(MIN_CELL_PX[0], fm.horizontalAdvance("−0.00") + 6)
        return QSize(int(left + heads * cell_w), int(top + layers * MIN_CELL_PX[1]))

    # painting and input -----------------------------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt's name
        p = QPainter(self)
        ink = self.palette().color(QPalette.ColorRole.WindowText)
        p.setPen(ink)
        fm = self.fontMetrics()
        p.drawText(QRectF(0, 0, self.width(), fm.lineSpacing()), Qt.AlignmentFlag.AlignCenter, self.title)
        if self.values is None:
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "not computed yet")
            return
        layers, heads = self.shape
        left, top = self._margins()
        for h in range(heads):
            r = self.cell_rect(1, h)
            p.drawText(QRectF(r.x(), fm.lineSpacing(), r.width(), top - fm.lineSpacing()),
                       Qt.AlignmentFlag.AlignCenter, f"h{h}")
        right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        written = self.cell_rect(1, 0).height() >= fm.height()  # rows tall enough for the numbers
        every = 1 if written else -(-fm.height() // max(int(self.cell_rect(1, 0).height()), 1))
        for layer in range(1, layers + 1):
            row = self.cell_rect(layer, 0)
            local = self._kinds and self._kinds[layer - 1] == "local"
            p.setPen(ink)
            if layer % every == 0 or every == 1:  # short rows: every few layers labelled
                label = QRectF(0, row.center().y() - fm.height() / 2, left - 4, fm.height())
                p.drawText(label, right, f"L{layer}" + ("·w" if local else "·G" if self._kinds else ""))
            for h in range(heads):
                cell = self.cell_rect(layer, h).adjusted(1, 1, -1, -1)
                color = self._colors[layer - 1][h]
                p.fillRect(cell, color)
                if written:
                    p.setPen(QColor(ink_on(color.name())))
                    p.drawText(cell, Qt.AlignmentFlag.AlignCenter, self._text(self.values[layer - 1, h]))
        if self._current is not None:
            p.setPen(CURRENT_PEN)
            p.drawRect(self.cell_rect(*self._current).adjusted(0, 0, -1, -1))
        p.end()

    def _text(self, value: float) -> str:
        shown = round(float(value), self._decimals) + 0.0  # + 0.0: a value rounded to -0 is written 0
        return f"{shown:.{self._decimals}f}".replace("-", "−")

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt's name
        cell = self.cell_at(event.position().toPoint())
        if cell is not None:
            layer, head = cell
            kind = f" ({self._kinds[layer - 1]})" if self._kinds else ""
            QToolTip.showText(event.globalPosition().toPoint(), f"layer {layer}{kind}, head {head}: "
                              f"{self.title} {self._text(self.values[layer - 1, head])}", self)
        super().mouseMoveEvent(event)
