"""RoPE's q·k against relative distance, for the current config (pyqtgraph).

Two curves from core/positions.py: q = k = ones (the slow fall-off RoPE is known for,
the same for every model of this head width) and, once a trace is there, this layer's
own head-0 query of the first token against its own head-0 key, moved apart by d
positions. Both depend only on the distance, which is RoPE's point. The window, if any,
is marked: keys beyond it are never seen.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QFontMetricsF, QPalette
from PySide6.QtWidgets import QLabel, QSplitter, QVBoxLayout, QWidget

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.specs.positions import ROPE_FORMULA, rope_distance_curve, rope_score_at
from mha_explorer.core.stages.trace import current_trace
from mha_explorer.core.variants.registry import family_of
from mha_explorer.qt.picture import DrawnShape, DrawnText
from mha_explorer.qt.picture_items import SceneReader
from mha_explorer.qt.stage.header_fit import ELLIPSIS_AIR, elide_lines

ONES_COLOR = "#7F7F7F"  # the reference curve, in D's neutral grey
LAYER_COLOR = "#CC79A7"  # d_k's reddish purple: a head's own vectors
WINDOW_COLOR = "#D55E00"
AXIS_AIR = 6  # pixels between an axis's ticks' words and its own
PLOT_LINES = 8  # lines of the widget's type the curves and their axes keep under the caption...
PLOT_LEAST_LINES = 4  # ...or at least, squeezed: ticks and curves, the axes' words left to the key


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

    LEAST = 110  # its curves and key still read; more, and a laptop's window outgrew its screen
    FLOOR = 90  # the least it keeps when giving height to the stage's title above

    def __init__(self, controller, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.setObjectName("rope_plot")
        self._overhang = 0  # the room over the plot for its top tick's words (_fit_type)
        self.caption = QLabel(objectName="rope_caption")
        self.caption.setWordWrap(True)
        self._said = ""  # the caption in full; on a short plot it shows cut at whole lines
        # which curve is which, on a line of its own: inside the plot the words sat on the
        # curves and the ticks of a short plot
        self.key = QLabel(objectName="rope_key")
        self.plot = pg.PlotWidget(objectName="rope_plot_widget")
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.ones_curve = self.plot.plot(pen=pg.mkPen(ONES_COLOR, width=2))
        self.layer_curve = self.plot.plot(pen=pg.mkPen(LAYER_COLOR, width=2))
        dashed = pg.mkPen(WINDOW_COLOR, width=1, style=Qt.PenStyle.DashLine)
        self.window_line = pg.InfiniteLine(angle=90, pen=dashed)  # said in the key, not on the line
        self.plot.addItem(self.window_line)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.caption)
        layout.addWidget(self.key)
        layout.addWidget(self.plot, 1)
        self.plot.getPlotItem().vb.sigResized.connect(self._fit_ticks)
        self._fit_type()
        controller.config_changed.connect(lambda _cfg: self.refresh())
        controller.trace_ready.connect(lambda _trace: self.refresh())
        self.refresh()

    @classmethod
    def under(cls, picture: QSplitter, controller) -> RopePlot:
        """A plot added under the diagram in ``picture`` (the stage view shares the height);
        on the page's own colour (its palette's base), not pyqtgraph's black."""
        plot = cls(controller)
        picture.addWidget(plot)
        return plot

    def least(self) -> int:
        """The height the stage view keeps for it: LEAST, or more where its type is larger
        (the plot PLOT_LINES lines of it, the key and a line of the caption theirs)."""
        line = QFontMetricsF(self.font()).lineSpacing()
        return max(self.LEAST, int(PLOT_LINES * QFontMetricsF(self.font()).height() + 2 * line + 6))

    def squeezed(self) -> int:
        """The least it can be squeezed to (a window too crowded to give the centre what it
        asks): the plot PLOT_LEAST_LINES lines, the key and a line of the caption."""
        line = QFontMetricsF(self.font()).lineSpacing()
        return int(self.plot.minimumHeight() + 2 * line + 6)

    def give_height(self, short: int) -> int:
        """How much of ``least()`` it gives the stage's title above, ``short`` pixels but never
        more than LEAST − FLOOR (0 or less: none)."""
        return max(0, min(short, self.LEAST - self.FLOOR))

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
        window_shown = cfg.window is not None and cfg.window <= far
        self.window_line.setVisible(window_shown)
        if cfg.window is not None:
            self.window_line.setValue(cfg.window)
        self.key.setText(_key(has_own, cfg.window if window_shown else None))
        self.plot.getPlotItem().vb.autoRange()
        self._fit_ticks()
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
        self._fit_axes()
        self._fit_ticks()

    def _fit_ticks(self) -> None:
        """As many labelled ticks up the side as its height has lines for (1, 2 or 5 times a
        power of ten apart): a short plot wrote them over each other."""
        axis = self.plot.getPlotItem().getAxis("left")
        vb = self.plot.getPlotItem().vb
        room = max(1.0, vb.height())
        px = QFontMetricsF(self.font()).height()
        # room above and below the curves for half a label: the end ticks' words stay whole
        vb.setDefaultPadding(min(0.3, 0.6 * px / room))
        low, high = vb.viewRange()[1]
        labels = max(2, int(room // (1.6 * px)))
        step = nice_step((high - low) / labels)
        axis.setTickSpacing(step, step / 2)
        # words at the labelled ticks only, not the minor ones, and none past the room over the
        # plot (a tick in the padding above the curves was cut by the widget's top edge)
        axis.setStyle(maxTextLevel=0, hideOverlappingLabels=self._overhang)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.PaletteChange):  # presentation, theme
            self._fit_type()
            self._fit_caption()

    def _fit_type(self) -> None:
        """The axes in the widget's own type (presentation's is larger), their words short
        enough to stand beside a short plot; the plot keeps PLOT_LINES lines of it."""
        font = self.font()
        px = QFontMetricsF(font).height()
        ink = self.palette().color(QPalette.ColorRole.Text)  # pyqtgraph's grey read 3:1 on white
        self.plot.setBackground(self.palette().color(QPalette.ColorRole.Base))
        for side, words in (("bottom", "distance m − n"), ("left", "q·k")):
            axis = self.plot.getPlotItem().getAxis(side)
            axis.setStyle(tickFont=font)
            axis.setTextPen(ink)
            axis.setPen(ink)
            axis.label.setFont(font)
            axis.setLabel(words, color=ink.name())
        # half a line of room over the plot: the top tick's words stay whole beside it
        self._overhang = math.ceil(px / 2)
        self.plot.getPlotItem().layout.setContentsMargins(1, self._overhang + 1, 1, 1)
        self.plot.setMinimumHeight(int(PLOT_LEAST_LINES * px))
        self.setMinimumHeight(self.squeezed())
        self._labelled = None
        self._fit_axes()

    def _fit_axes(self) -> None:
        """Room for the ticks' words and each axis's own word under (or beside) them, as
        pyqtgraph sets its word a few pixels past its edge; a plot squeezed under its least
        height (a crowded window gives the centre less than it asks) keeps its ticks and
        leaves the axes' words to the caption and the key, rather than cutting them."""
        labelled = self.plot.height() >= PLOT_LINES * QFontMetricsF(self.font()).height() - 1
        if labelled == self._labelled:
            return
        self._labelled = labelled
        metrics = QFontMetricsF(self.font())
        for side in ("bottom", "left"):
            axis = self.plot.getPlotItem().getAxis(side)
            axis.showLabel(labelled)
            ticks = abs(axis.style["tickLength"]) + axis.style["tickTextOffset"][1 if side == "bottom" else 0]
            label = axis.label.boundingRect().height() if labelled else 0.0
            if side == "bottom":
                axis.setHeight(int(ticks + metrics.height() + label + AXIS_AIR))
            else:
                axis.setWidth(int(ticks + metrics.horizontalAdvance("−0000") + label + AXIS_AIR))

    def _fit_caption(self) -> None:
        """The caption in the lines the plot's height leaves over the plot's own room, cut at a
        whole line with "…" (full text on hover): squeezed, it showed half a line at each edge."""
        font = self.caption.font()
        room = PLOT_LINES * QFontMetricsF(self.font()).height() + self.key.sizeHint().height()
        lines = max(1, int((self.height() - room) // QFontMetricsF(font).lineSpacing()))
        cut = elide_lines(self._said, font, self.width() - ELLIPSIS_AIR, lines)
        self.caption.setText(cut)
        self.caption.setToolTip(self._said if cut != self._said else "")

    # what is drawn, for the picture checks (qt/picture.py); the caption and key are labels
    def drawn_texts(self) -> list[DrawnText]:
        return SceneReader(self.plot, "RoPE plot").texts()

    def drawn_shapes(self) -> list[DrawnShape]:
        vb = self.plot.getPlotItem().vb
        reader = SceneReader(self.plot, "RoPE plot")
        return [DrawnShape(reader.rect(vb, vb.boundingRect()), "RoPE plot", "curves", "plot",
                           QFontMetricsF(self.font()).height())]


def _key(own: bool, window: int | None) -> str:
    """Which curve is which: a coloured mark before each, the words in the page's ink."""
    def mark(color: str, sign: str = "━━") -> str:
        return f"<span style='color:{color}; font-weight:700'>{sign}</span>"

    parts = [f"{mark(ONES_COLOR)} q = k = ones"]
    if own:
        parts.append(f"{mark(LAYER_COLOR)} this layer: head 0, token 0")
    if window is not None:
        parts.append(f"{mark(WINDOW_COLOR, '┆')} window ({window:,})")
    return "&nbsp;&nbsp;&nbsp;".join(parts)


def nice_step(least: float) -> float:
    """The smallest of 1, 2 or 5 times a power of ten that is at least ``least``."""
    if least <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(least))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= least)
