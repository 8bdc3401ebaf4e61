"""The lab's plots and map grid: pyqtgraph items created once, refreshed with new
numpy data (setData / setImage), never rebuilt per update."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QWidget

# Okabe-Ito colours, readable for colour-blind eyes; one per head count of the sweep
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")


def color_for(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


class CurvePlot(pg.PlotWidget):
    """Named curves overlaid on one plot; ``set_curve`` adds or refreshes one."""

    NEW_CURVES_PER_CALL = 2  # a legend entry and curve each: 16 at once held the loop too long

    def __init__(self, title: str, x_label: str, y_label: str, parent: QWidget | None = None,
                 y_range: tuple[float, float] | None = None):
        super().__init__(parent=parent)
        self.setBackground(None)
        self.setTitle(title)
        self.setLabel("bottom", x_label)
        self.setLabel("left", y_label)
        self.showGrid(x=True, y=True, alpha=0.25)
        self.addLegend(offset=(-10, 10))
        if y_range is not None:
            self.setYRange(*y_range, padding=0.02)
        self._curves: dict[str, pg.PlotDataItem] = {}
        self._family = 0

    def set_curve(self, name: str, x: np.ndarray, y: np.ndarray, color: str, symbol: str | None = None):
        curve = self._curves.get(name)
        if curve is None:
            curve = self.plot(name=name, pen=pg.mkPen(color, width=2), symbol=symbol,
                              symbolBrush=color, symbolSize=6)
            self._curves[name] = curve
        curve.setData(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
        return curve

    def set_family(self, x: np.ndarray, ys: np.ndarray, names: list[str], colors: list[str]) -> bool:
        """Curves ys [n, points] that belong together (one per head); a different n starts
        over. New curves are added a few per call; returns True once all are drawn."""
        if len(names) != self._family:
            self.clear_curves()
            self._family = len(names)
        upto = min(len(names), len(self._curves) + self.NEW_CURVES_PER_CALL)
        for i in range(upto):
            self.set_curve(names[i], x, ys[i], colors[i])
        return upto == len(names)

    def curve_data(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Every curve's x and y (for export)."""
        return {name: c.getData() for name, c in self._curves.items()}

    def clear_curves(self) -> None:
        for curve in self._curves.values():
            self.removeItem(curve)
        legend = self.plotItem.legend
        if legend is not None:
            legend.clear()
        self._curves.clear()


class MapGrid(pg.GraphicsLayoutWidget):
    """Attention maps in a grid, one per head: query rows down, keys across, labelled
    with the evaluation sample's tokens. Colours 0..1 with a fixed scale, so maps
    refreshed during training compare frame to frame."""

    COLUMNS = 4
    NEW_CELLS_PER_TURN = 1
    TURN_MS = 4

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent=parent)
        self.setBackground(None)
        self._cells: list[tuple[pg.PlotItem, pg.ImageItem]] = []
        self._lut = pg.colormap.get("viridis").getLookupTable(nPts=256)
        self._labels: list[str] | None = None
        self._shape: tuple[int, int] = (0, 0)
        self._later: tuple | None = None  # maps still waiting for cells

    def show_maps(self, maps: np.ndarray, titles: list[str], labels: list[str] | None = None) -> None:
        """``maps`` float [n, T, T]. Cells are reused while n, T and the labels stay; new
        cells are built a few per event-loop turn (16 at once held the loop ~250 ms)."""
        shape = (len(maps), maps.shape[-1])
        if shape != self._shape or labels != self._labels:
            self.clear()
            self._cells.clear()
            self._shape, self._labels = shape, labels
        missing = shape[0] - len(self._cells)
        for _ in range(min(missing, self.NEW_CELLS_PER_TURN)):
            self._add_cell(len(self._cells), shape[1], labels)
        if missing > self.NEW_CELLS_PER_TURN:
            self._later = (maps, titles, labels)
            QTimer.singleShot(self.TURN_MS, self._continue)
        for (plot, image), data, title in zip(self._cells, maps, titles, strict=False):
            # ImageItem reads [x, y]: the transpose puts keys across and queries down
            image.setImage(np.ascontiguousarray(data.T, dtype=np.float32), levels=(0.0, 1.0))
            plot.setTitle(title, size="9pt")

    def _continue(self) -> None:
        if self._later is not None:
            later, self._later = self._later, None
            self.show_maps(*later)

    def _add_cell(self, i: int, T: int, labels: list[str] | None) -> None:
        plot = self.addPlot(row=i // self.COLUMNS, col=i % self.COLUMNS)
        plot.setMouseEnabled(False, False)
        plot.hideButtons()
        plot.invertY(True)
        plot.setAspectLocked(True)
        image = pg.ImageItem(axisOrder="col-major")
        image.setLookupTable(self._lut)
        plot.addItem(image)
        plot.setRange(xRange=(0, T), yRange=(0, T), padding=0)
        plot.disableAutoRange()
        if labels:
            ticks = [[(j + 0.5, t) for j, t in enumerate(labels)]]  # cell j spans [j, j + 1)
            plot.getAxis("bottom").setTicks(ticks)
            plot.getAxis("left").setTicks(ticks)
        self._cells.append((plot, image))

    def cell_count(self) -> int:
        return len(self._cells)


class StaggeredRefresh(QObject):
    """Runs scheduled view updates one per timer tick, newest per key, so each plot
    repaints in its own event-loop turn (a turn that redrew every plot at once took
    about 40 ms on a busy two-core machine)."""

    TICK_MS = 4

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._pending: dict[str, object] = {}
        self._timer = QTimer(self)
        self._timer.setInterval(self.TICK_MS)
        self._timer.timeout.connect(self._run_one)

    def schedule(self, key: str, update) -> None:
        self._pending[key] = update  # a newer update of the same view replaces the older
        if not self._timer.isActive():
            self._timer.start()

    def _run_one(self) -> None:
        if not self._pending:
            self._timer.stop()
            return
        key = next(iter(self._pending))
        self._pending.pop(key)()
