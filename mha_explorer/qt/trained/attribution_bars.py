"""The last token's logit split into its parts, as bars: the embedding, a head, an MLP each add
their direct share (positive to the right, negative to the left of a zero line). The largest
parts are drawn, biggest first; a head's bar, clicked, opens that head."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPoint, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QMouseEvent, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QSizePolicy, QWidget

from mha_explorer.core.display.colors import DIM_COLORS

SHOWN = 16  # bars drawn: the parts with the largest share, whatever their sign
UP, DOWN = QColor(DIM_COLORS["H"]), QColor(DIM_COLORS["T"])  # raises / lowers the logit


class AttributionBars(QWidget):
    head_chosen = Signal(int, int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("attribution_bars")
        self.setAccessibleName("The logit's largest parts")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMouseTracking(True)
        self.names: list[str] = []
        self.values = np.zeros(0)
        self.heads: list[tuple[int, int] | None] = []

    def set_parts(self, names, values, heads) -> None:
        """All the parts; the SHOWN largest in size are drawn."""
        values = np.asarray(values, dtype=np.float64)
        order = np.argsort(-np.abs(values), kind="stable")[:SHOWN]
        self.names = [names[i] for i in order]
        self.values = values[order]
        self.heads = [heads[i] for i in order]
        self.updateGeometry()
        self.update()

    def _row_px(self) -> float:
        return self.fontMetrics().height() + 6.0

    def _label_px(self) -> float:
        fm = self.fontMetrics()
        return max((fm.horizontalAdvance(n) for n in self.names), default=40) + 8.0

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(int(self._label_px() + 280), int(self._row_px() * max(len(self.names), 4)))

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        """Every bar's row whole: a short place scrolls rather than squeezing the rows together."""
        return QSize(int(self._label_px() + 140), int(self._row_px() * max(len(self.names), 4)))

    def row_rect(self, i: int) -> QRectF:
        return QRectF(0, i * self._row_px(), self.width(), self._row_px())

    def row_at(self, point: QPoint) -> int | None:
        for i in range(len(self.names)):
            if self.row_rect(i).contains(point):
                return i
        return None

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt's name
        p = QPainter(self)
        ink = self.palette().color(QPalette.ColorRole.WindowText)
        p.setPen(ink)
        if not self.names:
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "the logit's parts, once computed")
            return
        fm = self.fontMetrics()
        label = self._label_px()
        number = fm.horizontalAdvance("−00.00") + 8
        width = self.width() - label - 2 * number  # room for a value on either side
        low, high = min(float(self.values.min()), 0.0), max(float(self.values.max()), 0.0)
        scale = width / ((high - low) or 1.0)  # pixels per unit of logit
        zero = label + number - low * scale
        right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        left = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
        for i, (name, value) in enumerate(zip(self.names, self.values, strict=True)):
            row = self.row_rect(i)
            p.setPen(ink)
            p.drawText(QRectF(0, row.y(), label - 6, row.height()), right, name)
            length = value * scale
            bar = QRectF(zero + min(length, 0), row.y() + 3, abs(length), row.height() - 6)
            p.fillRect(bar, UP if value >= 0 else DOWN)
            text = f"{value:+.2f}".replace("-", "−")
            if value >= 0:
                p.drawText(QRectF(bar.right() + 4, row.y(), number, row.height()), left, text)
            else:
                p.drawText(QRectF(bar.left() - number - 4, row.y(), number, row.height()), right, text)
        p.setPen(ink)
        p.drawLine(int(zero), 0, int(zero), int(self.row_rect(len(self.names) - 1).bottom()))
        p.end()

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt's name
        i = self.row_at(event.position().toPoint())
        if i is not None and self.heads[i] is not None:
            self.head_chosen.emit(*self.heads[i])
            return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt's name
        i = self.row_at(event.position().toPoint())
        head = i is not None and self.heads[i] is not None
        self.setCursor(Qt.CursorShape.PointingHandCursor if head else Qt.CursorShape.ArrowCursor)
        if i is not None:
            self.setToolTip(f"{self.names[i]}: {self.values[i]:+.3f} of the logit"
                            + (" (click to open this head)" if head else ""))
        super().mouseMoveEvent(event)
