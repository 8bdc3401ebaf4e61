"""An axis that names tokens when there is room and counts positions otherwise.

Cell centres sit on whole numbers (the image is placed from -0.5), so a tick
at 3 is token 3. The choice is made at every repaint from the axis's own pixel
length, which means a resized window or a zoomed dialog shows labels as soon
as they fit, without the panel having to track sizes.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QFont, QFontMetrics

LABEL_GAP_PX = 6  # air between neighbouring tick labels


class TokenAxis(pg.AxisItem):
    def __init__(self, orientation: str, **kwargs) -> None:
        super().__init__(orientation, **kwargs)
        self._labels: tuple[str, ...] = ()
        self._first = 0  # position of _labels[0]
        self._label_px = 0.0  # pixels one label needs along the axis
        self._naming = False  # what the last tickValues chose, read by tickStrings

    def set_labels(self, labels: tuple[str, ...] | list[str], first: int = 0) -> None:
        """Token names for positions first, first + 1, ...; empty: positions only."""
        labels = tuple(labels)
        if labels == self._labels and first == self._first:
            return
        self._labels, self._first = labels, first
        metrics = QFontMetrics(self.style["tickFont"] or QFont())
        if self.orientation in ("left", "right"):
            self._label_px = metrics.height() + 1
        else:
            widest = max((metrics.horizontalAdvance(t) for t in labels), default=0)
            self._label_px = widest + LABEL_GAP_PX
        self.picture = None  # tick cache: redraw with the new names
        self.update()

    def _visible(self, lo: float, hi: float) -> range:
        lo, hi = sorted((lo, hi))
        start = max(self._first, math.ceil(lo))
        stop = min(self._first + len(self._labels), math.floor(hi) + 1)
        return range(start, max(start, stop))

    def labels_fit(self, lo: float, hi: float, size: float) -> bool:
        shown = self._visible(lo, hi)
        return bool(self._labels) and len(shown) * self._label_px <= size

    def tickValues(self, minVal: float, maxVal: float, size: float):
        self._naming = self.labels_fit(minVal, maxVal, size)
        if self._naming:
            return [(1.0, [float(v) for v in self._visible(minVal, maxVal)])]
        # positions: whole numbers only, at pyqtgraph's own spacing
        levels = []
        for spacing, values in super().tickValues(minVal, maxVal, size):
            whole = [v for v in np.asarray(values, dtype=float) if float(v).is_integer()]
            if spacing >= 1 and whole:
                levels.append((spacing, whole))
        return levels

    def tickStrings(self, values, scale, spacing):
        if self._naming:
            return [self._labels[int(v) - self._first] for v in values]
        return [str(int(v)) for v in values]
