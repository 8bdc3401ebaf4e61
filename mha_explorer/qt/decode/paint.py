"""Painting pieces the decode and tiles views share (no torch)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPalette, QPen
from PySide6.QtWidgets import QWidget

from mha_explorer.core.units import format_bytes

if TYPE_CHECKING:
    import numpy as np

LOW = QColor("#F7F7F7")  # the colour ramp for values: pale to the key axis' orange-red
HIGH = QColor("#B2182B")


def ink(widget: QWidget) -> QColor:
    return widget.palette().color(QPalette.ColorRole.WindowText)


def base(widget: QWidget) -> QColor:
    return widget.palette().color(QPalette.ColorRole.Window)


def ramp(t: float) -> QColor:
    """A colour between LOW (t = 0) and HIGH (t = 1)."""
    t = 0.0 if not math.isfinite(t) else min(1.0, max(0.0, t))
    return QColor.fromRgbF(LOW.redF() + (HIGH.redF() - LOW.redF()) * t,
                           LOW.greenF() + (HIGH.greenF() - LOW.greenF()) * t,
                           LOW.blueF() + (HIGH.blueF() - LOW.blueF()) * t)


def normalised(values: np.ndarray) -> np.ndarray:
    """Finite values scaled to 0..1 (all equal: 0.5); -inf (masked) stays NaN."""
    import numpy as np  # here, not at start-up: the window shows before numpy loads

    v = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(v)
    out = np.full(v.shape, np.nan)
    if finite.any():
        lo, hi = v[finite].min(), v[finite].max()
        out[finite] = 0.5 if hi == lo else (v[finite] - lo) / (hi - lo)
    return out


def text(p: QPainter, rect: QRectF, line: str, align=Qt.AlignmentFlag.AlignLeft) -> None:
    p.drawText(rect, int(align | Qt.AlignmentFlag.AlignVCenter), line)


def hatched(p: QPainter, rect: QRectF, color: QColor) -> None:
    """A rectangle drawn as hidden: outline and diagonal hatching."""
    p.save()
    p.setPen(QPen(color, 1))
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.drawRect(rect)
    p.setBrush(QColor(color))
    p.setPen(Qt.PenStyle.NoPen)
    brush = p.brush()
    brush.setStyle(Qt.BrushStyle.BDiagPattern)
    p.setBrush(brush)
    p.drawRect(rect)
    p.restore()


def size_bars(p: QPainter, rect: QRectF, rows: list[tuple[str, int, QColor]], pen: QColor) -> None:
    """Horizontal bars, one per (label, bytes, colour), lengths to the same scale."""
    if not rows:
        return
    top = max(n for _, n, _ in rows) or 1
    label_w = min(rect.width() * 0.35, 220.0)
    # a row never shorter than its type: in a short view the last rows wait, none overlap
    line = p.fontMetrics().height()
    rows = rows[:max(1, int(rect.height() // line))]
    h = max(rect.height() / len(rows), line)
    for i, (label, n, color) in enumerate(rows):
        y = rect.top() + i * h
        p.setPen(pen)
        text(p, QRectF(rect.left(), y, label_w - 6, h), label, Qt.AlignmentFlag.AlignRight)
        bar_max = rect.width() - label_w - 90
        width = max(1.0, bar_max * n / top) if n else 0.0
        p.fillRect(QRectF(rect.left() + label_w, y + h * 0.2, width, h * 0.6), color)
        text(p, QRectF(rect.left() + label_w + width + 6, y, 90, h), format_bytes(n))
