"""The lab's curve plots: pyqtgraph items created once, refreshed with new numpy data
(setData), never rebuilt per update."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QWidget

# Okabe-Ito colours, readable for colour-blind eyes; one per head count of the sweep
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")


# where the legend sits: (its point, the plot's point, offset in px), points as fractions
LEGEND_ANCHORS = {"top right": ((1, 0), (1, 0), (-10, 10)), "bottom right": ((1, 1), (1, 1), (-10, -10)),
                  "bottom middle": ((0.5, 1), (0.5, 1), (0, -10))}


def color_for(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


class CurvePlot(pg.PlotWidget):
    """Named curves overlaid on one plot; ``set_curve`` adds or refreshes one."""

    NEW_CURVES_PER_CALL = 2  # a legend entry and curve each: 16 at once held the loop too long
    LEGEND_ROWS = 6  # more entries than this go into further legend columns

    def __init__(self, title: str, x_label: str, y_label: str, parent: QWidget | None = None,
                 y_range: tuple[float, float] | None = None, legend: str = "top right"):
        """``legend``: where the curves are not (loss falls to the bottom, accuracy rises
        to the top, pruning curves fall at their right ends)."""
        super().__init__(parent=parent)
        self.setBackground(None)
        self.setTitle(title)
        self.setLabel("bottom", x_label)
        self.setLabel("left", y_label)
        self.showGrid(x=True, y=True, alpha=0.25)
        legend_item = self.addLegend()
        legend_item.anchor(*LEGEND_ANCHORS[legend])
        # a curve may pass behind the legend: its names stay readable over it
        backdrop = self.palette().color(QPalette.ColorRole.Window)
        backdrop.setAlpha(210)
        legend_item.setBrush(backdrop)
        if y_range is not None:
            self.setYRange(*y_range, padding=0.02)
        self._curves: dict[str, pg.PlotDataItem] = {}
        self._family = 0

    def set_curve(self, name: str, x: np.ndarray, y: np.ndarray, color: str, symbol: str | None = None):
        curve = self._curves.get(name)
        if curve is None:
            curve = self.plot(name=name, pen=pg.mkPen(color, width=2), symbol=symbol,
                              symbolBrush=color, symbolSize=6)
            # a long run (a loaded one may have 100,000 points) is drawn at about one point per
            # pixel, keeping each pixel's highest and lowest: one draw stays short
            curve.setDownsampling(auto=True, method="peak")
            curve.setClipToView(True)
            self._curves[name] = curve
        curve.setData(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
        return curve

    def set_family(self, x: np.ndarray, ys: np.ndarray, names: list[str], colors: list[str]) -> bool:
        """Curves ys [n, points] that belong together (one per head); a different n starts
        over. New curves are added a few per call; returns True once all are drawn."""
        if len(names) != self._family:
            self.clear_curves()
            self._family = len(names)
            legend = self.plotItem.legend
            legend.setColumnCount(max(1, math.ceil(len(names) / self.LEGEND_ROWS)))
            # past the palette, colours repeat: a legend would name two curves alike
            legend.setVisible(len(names) <= len(PALETTE))
        upto = min(len(names), len(self._curves) + self.NEW_CURVES_PER_CALL)
        for i in range(upto):
            self.set_curve(names[i], x, ys[i], colors[i])
        return upto == len(names)

    def curve_data(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Every curve's x and y (for export)."""
        return {name: c.getOriginalDataset() for name, c in self._curves.items()}  # not the drawn subset

    def fix_x(self, upto: float | None) -> None:
        """Steps 0..``upto`` across for a whole run, so the bottom axis is not laid out
        again with every new point (None: follow the data, for a loaded run)."""
        if upto is None:
            self.enableAutoRange(x=True)
        else:
            self.setXRange(0, upto, padding=0.02)

    def clear_curves(self) -> None:
        # the legend first, all at once: removing a curve still in it re-measures the legend
        # for each one (16 curves held the loop about 20 ms)
        legend = self.plotItem.legend
        if legend is not None:
            legend.clear()
        for curve in self._curves.values():
            self.removeItem(curve)
        self._curves.clear()
