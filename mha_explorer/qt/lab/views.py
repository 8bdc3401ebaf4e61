"""The right side of the Lab page: which run is shown, over four tabs: training
(curves and the live maps), the comparison table, ablation and pruning (ranking,
pruning curve on fresh data with Michel et al.'s share as a reference line, the
answer and the surviving heads' maps), and the induction circuit's phase change."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from mha_explorer.core.lab.lesson import HONEST_PRUNING, MICHEL, MICHEL_SHARE, head_count_story
from mha_explorer.qt.lab import tables
from mha_explorer.qt.lab.map_grid import MapGrid
from mha_explorer.qt.lab.phase import PhaseView
from mha_explorer.qt.lab.plots import CurvePlot
from mha_explorer.qt.lab.reflow import Reflow
from mha_explorer.qt.lab.short_note import ShortNote
from mha_explorer.qt.lab.splits import split
from mha_explorer.qt.nesting import nested
from mha_explorer.qt.staggered import StaggeredRefresh
from mha_explorer.qt.tab_names import every_tab_in_sight
from mha_explorer.qt.whole_rows import WholeTable

PREPARED_MAPS = 16  # map cells made ahead, while idle: the default sweep's largest run
# the views of the tabs built after the first (LabViews)
LATER_VIEWS = frozenset({"comparison", "tradeoff", "ranking", "pruning_plot", "answer", "pruning_note",
                         "survivors", "phase"})


def headed(heading: QLabel, view: QWidget) -> QWidget:
    """A line of words over a view that stretches."""
    box = QWidget()
    lay = QVBoxLayout(box)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.addWidget(heading)
    lay.addWidget(view, 1)
    return box


class LabViews(QWidget):
    """The Training tab is built with the page; the three behind it in the event-loop turns
    after (building all six plots and three map grids at once held the turn that opened the
    Lab about 250 ms). A view of a tab not built yet, asked for, builds the rest at once."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.loss_plot = CurvePlot("Training loss", "step", "cross-entropy")
        self.accuracy_plot = CurvePlot("Held-out accuracy", "step", "accuracy", y_range=(0, 1),
                                       legend="bottom right")
        self.entropy_plot = CurvePlot("Attention entropy per head", "step", "bits")
        self.maps = MapGrid()
        self.maps.prepare(PREPARED_MAPS)
        self.maps_heading = QLabel("The heads' maps appear here while a model trains.", wordWrap=True)
        training = Reflow((self.loss_plot, self.accuracy_plot, self.entropy_plot),
                          headed(self.maps_heading, self.maps))
        self.tabs = QTabWidget()
        self.tabs.addTab(training, "Training")
        self._pending = []  # (the tab's box, what builds its content), in tab order
        for name, build in (("Comparison", self._comparison_tab), ("Ablation && pruning", self._pruning_tab),
                            ("Induction circuit", self._phase_tab)):
            box = QWidget()
            QVBoxLayout(box).setContentsMargins(0, 0, 0, 0)
            self.tabs.addTab(box, name)
            self._pending.append((box, build))
        every_tab_in_sight(self.tabs)
        self.shown_run = QComboBox()
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        pick = nested(column, QHBoxLayout())
        pick.addWidget(QLabel("Run shown"))
        pick.addWidget(self.shown_run, 1)
        column.addWidget(self.tabs)
        QTimer.singleShot(0, self, self._build_next)

    def __getattr__(self, name: str):
        # only reached for a name not set yet: a view of a tab still to be built
        if name in LATER_VIEWS and self.__dict__.get("_pending"):
            self.finish()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _build_next(self) -> None:
        if self._pending:
            box, build = self._pending.pop(0)
            box.layout().addWidget(build())
        if self._pending:
            QTimer.singleShot(0, self, self._build_next)

    def finish(self) -> None:
        """Every tab built now."""
        while self._pending:
            self._build_next()

    def _comparison_tab(self) -> QWidget:
        self.comparison = WholeTable(0, len(tables.COMPARISON_COLUMNS))
        self.comparison.setHorizontalHeaderLabels(tables.COMPARISON_COLUMNS)
        self.comparison.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.tradeoff = QLabel(head_count_story(0, []), wordWrap=True, objectName="head_count_tradeoff")
        return headed(self.tradeoff, self.comparison)

    def _pruning_tab(self) -> QWidget:
        self.ranking = WholeTable(0, 3)
        self.ranking.setHorizontalHeaderLabels(("rank", "head", "accuracy drop"))
        self.ranking.verticalHeader().hide()  # the rank column numbers the rows
        self.ranking.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.pruning_plot = CurvePlot("Greedy pruning, measured on fresh data", "share of heads removed (%)",
                                      "accuracy on the report set", y_range=(0, 1), legend="bottom middle")
        self.pruning_plot.setXRange(0, 100, padding=0.02)
        reference = pg.InfiniteLine(MICHEL_SHARE * 100, angle=90, movable=False,
                                    pen=pg.mkPen("#888888", width=2, style=Qt.PenStyle.DashLine),
                                    label="Michel et al. 2019: ~40 % of BERT's heads",
                                    labelOpts={"position": 0.55, "color": "#666666"})
        self.pruning_plot.addItem(reference, ignoreBounds=True)
        self.answer = QLabel(wordWrap=True)
        self.pruning_note = ShortNote(f"{HONEST_PRUNING} {MICHEL}", lines=4)
        self.pruning_note.setStyleSheet("font-style: italic")
        self.survivors = MapGrid()
        self.survivors.prepare(PREPARED_MAPS)
        ranked = split(Qt.Orientation.Horizontal, self.ranking, self.pruning_plot)
        answer = QWidget()
        answer_box = QVBoxLayout(answer)
        answer_box.setContentsMargins(0, 0, 0, 0)
        answer_box.addWidget(self.answer)
        answer_box.addWidget(self.pruning_note)
        return split(Qt.Orientation.Vertical, ranked, headed(answer, self.survivors))

    def _phase_tab(self) -> QWidget:
        self.phase = PhaseView()
        return self.phase

    def empty(self, steps: int | None, later: StaggeredRefresh) -> None:
        """Empty every view for new runs of ``steps`` steps (None: as many as a loaded run
        has). Each plot empties in its own event-loop turn, ahead of the new runs' updates
        (emptied together they held the loop about 30 ms when a sweep started)."""
        for name, plot in (("loss", self.loss_plot), ("accuracy", self.accuracy_plot),
                           ("entropy", self.entropy_plot)):
            later.schedule(f"reset {name}", lambda plot=plot: (plot.clear_curves(), plot.fix_x(steps)))
        later.schedule("reset phase", lambda: (self.phase.clear(), self.phase.fix_x(steps)))
        later.schedule("reset pruning", self.pruning_plot.clear_curves)
        self.comparison.setRowCount(0)
        self.ranking.setRowCount(0)
        self.answer.clear()
        self.tradeoff.setText(head_count_story(0, []))  # the prompt to sweep
