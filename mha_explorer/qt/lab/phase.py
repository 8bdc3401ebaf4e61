"""The phase change, shown: the training loss over the held-out accuracy and the two
head scores of an induction circuit, on one step axis, with a line where the
induction head formed; beside them the circuit in words, the maps of its two heads
on a repeated-symbols probe, and what Olsson et al. found."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from mha_explorer.core.lab.lesson import OLSSON, best_per_step, circuit_story, head_name, phase_change
from mha_explorer.qt.lab.map_grid import MapGrid
from mha_explorer.qt.lab.plots import CurvePlot
from mha_explorer.qt.lab.splits import WordsColumn, split

ACCURACY, PREFIX, PREVIOUS, LOSS = "#000000", "#D55E00", "#0072B2", "#009E73"


def _marker() -> pg.InfiniteLine:
    pen = pg.mkPen("#D55E00", width=2, style=Qt.PenStyle.DashLine)
    line = pg.InfiniteLine(angle=90, movable=False, pen=pen)
    line.setVisible(False)
    return line


class PhaseView(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.loss_plot = CurvePlot("Training loss", "step", "cross-entropy")
        self.score_plot = CurvePlot("Accuracy and the circuit's head scores", "step", "0 to 1",
                                    y_range=(0, 1), legend="bottom right")
        self.score_plot.setXLink(self.loss_plot)
        self.markers = (_marker(), _marker())
        for plot, line in zip((self.loss_plot, self.score_plot), self.markers, strict=True):
            plot.addItem(line, ignoreBounds=True)
        self.story = QLabel("Train on the induction task with two layers and watch an induction head form.",
                            wordWrap=True)
        self.story.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.maps_heading = QLabel("", wordWrap=True)
        self.maps = MapGrid()
        self.maps.prepare(2)  # the induction head and the previous-token head it reads
        self.paper = QLabel(OLSSON, wordWrap=True)
        self.paper.setStyleSheet("font-style: italic")
        self.session = QLabel("", wordWrap=True)  # this session's runs of the task, by layer count
        self._by_layers: dict[tuple[str, int], tuple[float, float]] = {}
        self._columns()

    def _columns(self) -> None:

        curves = split(Qt.Orientation.Vertical, self.loss_plot, self.score_plot)
        words = WordsColumn()  # a short dock scrolls the page: the paragraphs stay whole
        box = QVBoxLayout(words)
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(self.story)
        box.addWidget(self.maps_heading)
        box.addWidget(self.maps, 1)
        box.addWidget(self.session)
        box.addWidget(self.paper)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(split(Qt.Orientation.Horizontal, curves, words))

    def clear(self) -> None:
        for plot in (self.loss_plot, self.score_plot):
            plot.clear_curves()
        for line in self.markers:
            line.setVisible(False)

    def fix_x(self, steps: int | None) -> None:
        self.loss_plot.fix_x(steps)

    def show_curves(self, steps: np.ndarray, loss, accuracy, prefix_best, previous_best, layers: int,
                    name: str) -> None:
        """Draw (or refresh) the four curves; the marker where prefix matching passed 0.5."""
        self.show_loss(steps, loss, name)
        self.show_scores(steps, loss, accuracy, prefix_best, previous_best, layers)

    def show_loss(self, steps: np.ndarray, loss, name: str) -> None:
        self.loss_plot.set_curve(f"{name} loss", np.asarray(steps, dtype=np.float64), loss, LOSS)

    def show_scores(self, steps: np.ndarray, loss, accuracy, prefix_best, previous_best, layers: int) -> None:
        steps = np.asarray(steps, dtype=np.float64)
        last = f"L{layers}" if layers > 1 else "the"
        self.score_plot.set_curve("held-out accuracy", steps, accuracy, ACCURACY)
        self.score_plot.set_curve(f"prefix matching, best of {last} heads", steps, prefix_best, PREFIX)
        self.score_plot.set_curve("previous token, best of L1 heads" if layers > 1
                                  else "previous token, best head", steps, previous_best, PREVIOUS)
        change = phase_change(steps, np.asarray(loss), np.asarray(prefix_best)) if len(steps) else None
        for line in self.markers:
            line.setVisible(change is not None)
            if change is not None:
                line.setValue(change["step"])

    def _session_line(self, task: str) -> str:
        """This session's runs of ``task`` side by side by layer count: the app's own
        one-layer against two-layer contrast, beside the paper's."""
        seen = sorted((layers, acc, score)
                      for (t, layers), (acc, score) in self._by_layers.items() if t == task)
        parts = [f"{layers} layer{'s' if layers > 1 else ''}: held-out accuracy {acc:.0%}, best prefix "
                 f"matching {score:.2f}" for layers, acc, score in seen]
        return f"Here, on {task}: " + "; ".join(parts) + "."

    def show_summary(self, summary: dict) -> None:
        """The run's curves, its circuit in words, and this session's runs by layers."""
        for part in self.summary_parts(summary):
            part()

    def summary_parts(self, summary: dict) -> list:
        """``show_summary`` as three calls a page can run in separate event-loop turns (the
        loss curve, the score curves, the words): drawn at once they held the loop ~50 ms."""
        heads, layers = summary["heads"], summary["layers"]
        curve, steps = summary["curve"], summary["score_steps"]

        def loss() -> None:
            self.loss_plot.clear_curves()
            if len(steps):
                self.show_loss(steps, curve[:, 1], f"h={heads}")

        def scores() -> None:
            self.score_plot.clear_curves()
            for line in self.markers:
                line.setVisible(False)
            if len(steps):
                self.show_scores(steps, curve[:, 1], curve[:, 2], best_per_step(summary["prefix"], heads, -1),
                                 best_per_step(summary["previous"], heads, 0), layers)

        def words() -> None:
            self.story.setText(circuit_story(summary))
            c = summary.get("circuit")
            if c:
                self._by_layers[(summary["task"], layers)] = (summary["final_accuracy"], c["induction_score"])
                self.session.setText(self._session_line(summary["task"]))

        return [loss, scores, words]

    def show_maps(self, summary: dict) -> None:
        """The induction head's map and the previous-token head's it reads, on the probe."""
        c = summary.get("circuit")
        if not c:
            return
        heads, layers = summary["heads"], summary["layers"]
        shown = [c["induction_head"]] + ([c["previous_head"]] if c["previous_head"] is not None else [])
        titles = [f"{head_name(i, heads, layers)} {what}"
                  for i, what in zip(shown, ("prefix matching", "previous token"), strict=False)]
        self.maps_heading.setText("On a probe of random symbols whose second half repeats the first: "
                                  "an induction head lights the diagonal one after the repeat's offset, "
                                  "a previous-token head the diagonal just below the main one.")
        self.maps.show_maps(c["maps"], titles, c["labels"])
