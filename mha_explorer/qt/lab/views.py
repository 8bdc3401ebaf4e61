"""The right side of the Lab page: which run is shown, over three tabs: training
(curves and the live maps), the comparison table, ablation and pruning (ranking,
pruning curve, the answer and the surviving heads' maps)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from mha_explorer.qt.lab import tables
from mha_explorer.qt.lab.map_grid import MapGrid
from mha_explorer.qt.lab.plots import CurvePlot
from mha_explorer.qt.lab.reflow import Reflow
from mha_explorer.qt.nesting import nested

PREPARED_MAPS = 16  # map cells made ahead, while idle: the default sweep's largest run


def split(orientation: Qt.Orientation, *widgets: QWidget) -> QSplitter:
    """Panels side by side or one over the other, each border draggable, none collapsing
    to nothing (a collapsed plot looks like a missing one)."""
    splitter = QSplitter(orientation)
    splitter.setChildrenCollapsible(False)
    for widget in widgets:
        splitter.addWidget(widget)
    return splitter


def headed(heading: QLabel, view: QWidget) -> QWidget:
    """A line of words over a view that stretches."""
    box = QWidget()
    lay = QVBoxLayout(box)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.addWidget(heading)
    lay.addWidget(view, 1)
    return box


class LabViews(QWidget):
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
        self.comparison = QTableWidget(0, len(tables.COMPARISON_COLUMNS))
        self.comparison.setHorizontalHeaderLabels(tables.COMPARISON_COLUMNS)
        self.ranking = QTableWidget(0, 3)
        self.ranking.setHorizontalHeaderLabels(("rank", "head", "accuracy drop"))
        self.ranking.verticalHeader().hide()  # the rank column numbers the rows
        self.ranking.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.pruning_plot = CurvePlot("Greedy pruning", "heads removed", "held-out accuracy", y_range=(0, 1),
                                      legend="bottom middle")
        self.answer = QLabel(wordWrap=True)
        self.survivors = MapGrid()
        self.survivors.prepare(PREPARED_MAPS)
        ranked = split(Qt.Orientation.Horizontal, self.ranking, self.pruning_plot)
        pruning = split(Qt.Orientation.Vertical, ranked, headed(self.answer, self.survivors))
        self.tabs = QTabWidget()
        self.tabs.addTab(training, "Training")
        self.tabs.addTab(self.comparison, "Comparison")
        self.tabs.addTab(pruning, "Ablation && pruning")
        self.shown_run = QComboBox()
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        pick = nested(column, QHBoxLayout())
        pick.addWidget(QLabel("Run shown"))
        pick.addWidget(self.shown_run, 1)
        column.addWidget(self.tabs)
