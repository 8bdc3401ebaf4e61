"""An axis that names tokens when there is room and counts positions otherwise.

Cell centres sit on whole numbers (the image is placed from -0.5), so a tick
at 3 is token 3. The choice is made at every repaint from the axis's own pixel
length, which means a resized window or a zoomed dialog shows labels as soon
as they fit, without the panel having to track sizes.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFont, QFontMetrics, QFontMetricsF

from mha_explorer.core.display.token_ticks import label_step, nice_step

LABEL_GAP_PX = 6  # air between neighbouring tick labels
TEXT_SLACK_PX = 10  # pyqtgraph keeps a text space up to this much wider than its text
NAMES_PX_MAX = 2400  # no axis is longer: more names than fit here are never drawn

_widest_cache: list = [None, None, 0]  # labels, font, widest: every map of a grid shares them


def _widest(labels: tuple[str, ...], font: QFont) -> int:
    """The widest label in pixels; computed once for all the cells showing the same names."""
    if labels is not _widest_cache[0] or font != _widest_cache[1]:
        metrics = QFontMetrics(font)
        _widest_cache[:] = labels, QFont(font), max(
            (metrics.horizontalAdvance(t) for t in labels), default=0)
    return _widest_cache[2]


_names_px: dict = {}  # (id of the names, font, key) -> (the names, px)


def _shared_size(labels: tuple[str, ...], font: QFont, key, texts, measure) -> float:
    """The widest of ``texts`` (names out of ``labels``), measured once for all the axes
    showing those names: sixteen maps of 4096 query rows each measured every name again."""
    where = (id(labels), font.key(), key)
    held = _names_px.get(where)
    if held is None or held[0] is not labels:  # the id of names since let go
        if len(_names_px) > 256:
            _names_px.clear()
        held = _names_px[where] = (labels, measure(font, texts))
    return held[1]


class TokenAxis(pg.AxisItem):
    """Overrides pyqtgraph internals with no public equivalent (``_updateLabel``,
    ``_updateWidth``/``_updateHeight``, ``textWidth``/``textHeight``, ``picture``):
    pyproject pins pyqtgraph below the next minor release and
    tests/qt/test_pyqtgraph_hooks.py names the hook if one disappears."""

    def __init__(self, orientation: str, **kwargs) -> None:
        super().__init__(orientation, **kwargs)
        # Positions are never scaled (the axis has no label to carry a prefix), and
        # with the prefix on every range change re-renders the hidden label's HTML.
        self.enableAutoSIPrefix(False)
        self._labels: tuple[str, ...] = ()
        self._first = 0  # position of _labels[0]
        self._count = 0  # positions the axis spans
        self._label_px = 0.0  # pixels one label needs along the axis
        self._naming = False  # what the last tickValues chose, read by tickStrings
        self._font = QFont()  # the tick font the sizes below were measured in
        self._text_px: dict = {}  # widest tick text of names or positions shown; or height

    # The axis title stays hidden (the cell's own title says what the map is), yet
    # pyqtgraph re-renders its HTML on every pen, text pen and range change: about
    # ten times per axis while a cell is built. Render it only when it is shown.
    def _updateLabel(self) -> None:
        if self.label.isVisibleTo(self):
            super()._updateLabel()
        else:
            self.picture = None
            self.update()

    def showLabel(self, show: bool = True) -> None:
        if show and not self.label.isVisibleTo(self):
            self.label.setVisible(True)
            super()._updateLabel()  # the text it skipped while hidden
        super().showLabel(show)

    def set_labels(self, labels: tuple[str, ...] | list[str], first: int = 0,
                   count: int | None = None) -> None:
        """Token names for positions first, first + 1, ...; empty: positions only.

        ``count`` is how many positions the axis spans (default: one per label).
        """
        labels = tuple(labels)
        count = len(labels) if count is None else count
        font = self.style["tickFont"] or QFont()
        if (labels, first, count, font) != (self._labels, self._first, self._count, self._font):
            self._labels, self._first, self._count = labels, first, count
            self._measure_labels(font)
        self._reserve_text_space(font)  # the length may have changed, too

    def _measure_labels(self, font: QFont) -> None:
        """Pixels one name needs along the axis, in ``font``."""
        self._font = font
        if self.orientation in ("left", "right"):
            self._label_px = QFontMetrics(font).height() + 1
        else:
            self._label_px = _widest(self._labels, font) + LABEL_GAP_PX
            # a word centred on the first or last column may reach past the map's
            # edge by half its width: let it, rather than drop the word
            self.setStyle(hideOverlappingLabels=int(self._label_px / 2) + 1)
        self._text_px.clear()
        self.picture = None  # tick cache: redraw with the new names
        self.update()

    def _reserve_text_space(self, font: QFont) -> None:
        """Size the tick text space now for what the first paint will draw.

        pyqtgraph measures the tick text on the first paint, then resizes the
        axis, which resizes the view and repaints both axes: twice the work for
        every new map of a grid. Here the text is measured as pyqtgraph measures
        it, for the names or positions that tickValues will choose at this size,
        and the space set before that first paint. In a view not laid out yet,
        where that choice is not known, it is set only if one width suits both.
        """
        if not self.style.get("autoExpandTextSpace") or not self.style.get("autoReduceTextSpace") \
                or not hasattr(self, "textWidth") or not hasattr(self, "_updateWidth"):
            return
        if self.orientation in ("top", "bottom"):  # one line of text, whatever it says
            height = self._text_size(font, "height", ("0",))
            if not height <= self.textHeight <= height + TEXT_SLACK_PX:
                self.textHeight = height
                self._updateHeight()
            return
        view = self.linkedView()
        last = self._first + max(self._count, 1) - 1
        if view is not None and view.height() > 1:  # laid out: the paint's choice is known
            lo, hi = sorted(view.viewRange()[1])
            shown = self._visible(lo, hi)
            if self._labels:  # names, thinned when crowded (tickValues)
                need = self._text_size(font, ("names", shown.start, shown.stop),
                                       self._labels[shown.start - self._first:
                                                    shown.stop - self._first])
            else:
                low = min(max(self._first, math.ceil(lo)), last)
                high = max(min(last, math.floor(hi)), low)
                need = self._text_size(font, ("numbers", low, high), (str(low), str(high)))
            if need != self.textWidth:  # exactly: every map of a grid gets the same space
                self.textWidth = need
                self._updateWidth()
            return
        wide = [self._text_size(font, ("names", self._first, last + 1), self._labels)
                if self._labels else
                self._text_size(font, ("numbers", self._first, last), (str(self._first), str(last)))]
        low, high = min(wide), max(wide)
        if (low < self.textWidth - TEXT_SLACK_PX or high > self.textWidth) \
                and high - low <= TEXT_SLACK_PX:  # one width that suits either
            self.textWidth = high
            self._updateWidth()

    def _text_size(self, font: QFont, key, texts) -> float:
        """_measure, remembered until the labels or the font change."""
        if key not in self._text_px:
            if len(self._text_px) > 64:  # a zoomed dialog adds one per range it refreshes at
                self._text_px.clear()
            if key[0] == "names":  # the same names in every map of a grid: measured once
                self._text_px[key] = _shared_size(self._labels, font, key, texts, self._measure)
            else:
                self._text_px[key] = self._measure(font, texts, height=key == "height")
        return self._text_px[key]

    @staticmethod
    def _measure(font: QFont, texts, height: bool = False) -> float:
        """The widest (or tallest) tick text, measured as pyqtgraph measures it."""
        metrics = QFontMetricsF(font)
        box, center = QRectF(0, 0, 100, 100), Qt.AlignmentFlag.AlignCenter
        if height:  # pyqtgraph takes 0.8 of the height: the box is a bit too tall
            return max((metrics.boundingRect(box, center, t).height() * 0.8 for t in texts),
                       default=0.0)
        return max((metrics.boundingRect(box, center, t).width() for t in texts), default=0.0)

    def _visible(self, lo: float, hi: float) -> range:
        lo, hi = sorted((lo, hi))
        start = max(self._first, math.ceil(lo))
        stop = min(self._first + len(self._labels), math.floor(hi) + 1)
        return range(start, max(start, stop))

    def tickValues(self, minVal: float, maxVal: float, size: float):
        """Every position when its label fits, else every 2nd, 5th, 10th, …: token
        names whenever the axis has them (thinned, never overprinted), else numbers."""
        font = self.style["tickFont"] or QFont()
        if font != self._font:  # the application's font grew (presentation) since the names came
            self._measure_labels(font)
        self._naming = bool(self._labels)
        lo, hi = sorted((minVal, maxVal))
        first = math.ceil(lo)
        last = math.floor(hi)
        if self._naming:
            first = max(first, self._first)
            last = min(last, self._first + len(self._labels) - 1)
        if last < first:
            return []
        tick_px = self._tick_px(last)
        step = label_step(last - first + 1, tick_px, size)
        step = step if self._naming else nice_step(step)  # every k-th word reads fine
        if step > 1:  # thinned: keep each label clear of the map's ends, where it is cut
            edge = math.ceil(tick_px / 2 / max(size / max(hi - lo, 1e-9), 1e-9) - 0.5)
            first, last = min(first + edge, last), max(last - edge, first)
        start = math.ceil(first / step) * step
        values = list(range(start, last + 1, step)) or [(first + last) // 2]  # one, centred
        return [(float(step), [float(v) for v in values])]

    def _tick_px(self, last: int) -> float:
        """Pixels one tick label needs along the axis (its text and some air)."""
        if self._naming:
            return self._label_px
        if self.orientation in ("left", "right"):
            return QFontMetrics(self._font).height() + 1
        return QFontMetrics(self._font).horizontalAdvance(str(last)) + LABEL_GAP_PX

    def tickStrings(self, values, scale, spacing):
        if self._naming:
            return [self._labels[int(v) - self._first] for v in values]
        return [str(int(v)) for v in values]

