"""RoPE's q·k against relative distance, for the current config (pyqtgraph).

Two curves from core/positions.py: q = k = ones (the slow fall-off RoPE is known for,
the same for every model of this head width) and, once a trace is there, this layer's
own head-0 query of the first token against its own head-0 key, moved apart by d
positions. Both depend only on the distance, which is RoPE's point. The window, if any,
is marked: keys beyond it are never seen.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFontMetricsF
from PySide6.QtWidgets import QLabel, QSplitter, QVBoxLayout, QWidget

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.specs.positions import ROPE_FORMULA, rope_distance_curve, rope_score_at
from mha_explorer.core.stages.trace import current_trace
from mha_explorer.core.variants.registry import family_of
from mha_explorer.qt.stage.header_fit import ELLIPSIS_AIR, elide_lines

ONES_COLOR = "#7F7F7F"  # the reference curve, in D's neutral grey
LAYER_COLOR = "#CC79A7"  # d_k's reddish purple: a head's own vectors
WINDOW_COLOR = "#D55E00"
PLOT_ROOM = 60  # pixels the curves and their axis keep under the caption


def max_distance(cfg: MHAConfig) -> int:
    """Far enough to see the curve fall and wave: the key length, at least 64, at most 4,096."""
    return int(min(4096, max(64, cfg.S)))


def layer_vectors(trace, cfg: MHAConfig) -> tuple[np.ndarray, np.ndarray] | None:
    """Head 0's unturned query of token 0 and key of token 0 (numpy), from a trace."""
    if trace is None:
        return None
    found = []
    for stage, name in family_of(cfg).rope_inputs:
        tensor = trace.tensors.get(stage, {}).get(name)
        if tensor is None:
            return None
        found.append(tensor.reshape(-1, tensor.shape[-1])[0])  # [width]: batch 0, head 0, token 0
    return found[0], found[1]


class RopePlot(QWidget):
    """Public: ``plot`` (pg.PlotWidget), ``caption`` (QLabel), ``ones_curve`` and ``layer_curve``
    (pg.PlotDataItem), ``window_line`` (pg.InfiniteLine, hidden without a window),
    ``refresh()`` (on config_changed and trace_ready)."""

    LEAST = 110  # its curves and legend still read; more, and a laptop's window outgrew its screen
    FLOOR = 90  # the least it keeps when giving height to the stage's title above

    def __init__(self, controller, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.setObjectName("rope_plot")
        self.setMinimumHeight(self.LEAST)
        self.caption = QLabel(objectName="rope_caption")
        self.caption.setWordWrap(True)
        self._said = ""  # the caption in full; on a short plot it shows cut at whole lines
        self.plot = pg.PlotWidget(objectName="rope_plot_widget")
        self.plot.setLabel("bottom", "relative distance m − n (positions)")
        self.plot.setLabel("left", "q·k after RoPE")
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.addLegend(offset=(-10, 10))
        self.ones_curve = self.plot.plot(pen=pg.mkPen(ONES_COLOR, width=2), name="q = k = ones")
        self.layer_curve = self.plot.plot(pen=pg.mkPen(LAYER_COLOR, width=2),
                                          name="this layer, head 0, token 0")
        dashed = pg.mkPen(WINDOW_COLOR, width=1, style=Qt.PenStyle.DashLine)
        self.window_line = pg.InfiniteLine(angle=90, pen=dashed, label="window",
                                           labelOpts={"position": 0.9, "color": WINDOW_COLOR})
        self.plot.addItem(self.window_line)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addWidget(self.plot, 1)
        controller.config_changed.connect(lambda _cfg: self.refresh())
        controller.trace_ready.connect(lambda _trace: self.refresh())
        self.refresh()

    @classmethod
    def under(cls, picture: QSplitter, controller, background: QColor) -> RopePlot:
        """A plot added under the diagram in ``picture``, sharing its height about 55:45."""
        plot = cls(controller)
        plot.plot.setBackground(background)
        picture.addWidget(plot)
        h = max(picture.height(), 400)
        picture.setSizes([int(h * 0.55), h - int(h * 0.55)])
        return plot

    def give_height(self, short: int) -> int:
        """Let its least height fall below LEAST by ``short`` pixels, never under FLOOR (0 or
        less: back to LEAST); returns the pixels given."""
        give = max(0, min(short, self.LEAST - self.FLOOR))
        self.setMinimumHeight(self.LEAST - give)
        return give

    def refresh(self) -> None:
        cfg = self.controller.config
        width = family_of(cfg).rope_width(cfg)
        if width % 2:
            width -= 1  # an odd head width cannot be turned; the config refuses RoPE then
        far = max_distance(cfg)
        distances, ones = rope_distance_curve(max(2, width), far)
        self.ones_curve.setData(distances, ones)
        own = layer_vectors(current_trace(self.controller.trace, cfg), cfg)
        has_own = own is not None and own[0].shape[-1] == width and width >= 2
        if has_own:
            self.layer_curve.setData(distances, rope_score_at(own[0], own[1], distances))
        else:
            self.layer_curve.setData([], [])  # no trace of this config yet
        self.layer_curve.setVisible(has_own)
        self.window_line.setVisible(cfg.window is not None and cfg.window <= far)
        if cfg.window is not None:
            self.window_line.setValue(cfg.window)
        where = family_of(cfg).rope_part
        status = ("" if cfg.positions_spec.rotates_qk else
                  f"Positions are {cfg.positions} here: this is what RoPE would do. ")
        self._said = (f"{status}RoPE turns {where}, {width} numbers as {width // 2} pairs: "
                      f"{ROPE_FORMULA}. A query at m and a key at n meet at the angle (m − n)·θ, "
                      "so q·k depends only on the distance.")
        self._fit_caption()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_caption()

    def _fit_caption(self) -> None:
        """The caption in the lines the plot's height leaves over PLOT_ROOM, cut at a whole
        line with "…" (full text on hover): squeezed, it showed half a line at each edge."""
        font = self.caption.font()
        lines = max(1, int((self.height() - PLOT_ROOM) // QFontMetricsF(font).lineSpacing()))
        cut = elide_lines(self._said, font, self.width() - ELLIPSIS_AIR, lines)
        self.caption.setText(cut)
        self.caption.setToolTip(self._said if cut != self._said else "")
