"""One click shows a trained decoder's induction heads: 50 random tokens, then the same 50
again. The model cannot predict the first copy; an induction head finds where the current
token occurred before and copies what followed, so the second copy's loss collapses. Every
head's prefix-matching score (its weight on the token after the earlier occurrence) is drawn
as a layers × heads grid, local and global layers told apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPalette
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from mha_explorer.core.models.catalog import model_named
from mha_explorer.qt.colormaps import lookup_table
from mha_explorer.qt.job_controls import JobControls
from mha_explorer.qt.jobs import JobDone, JobFailed, JobKind
from mha_explorer.qt.nesting import nested

if TYPE_CHECKING:
    from mha_explorer.core.display.decoder import InductionData
    from mha_explorer.qt.controller import Controller
    from mha_explorer.qt.jobs import Jobs

REPEATED = 50  # random tokens, each shown twice


def _induction(model_key, n, *, cancel, progress):
    from mha_explorer.core.display.decoder import induction  # torch, on the jobs thread

    return induction(model_key, n, cancel=cancel, progress=progress)


class ScoreGrid(QWidget):
    """layers × heads cells, each with its score written in it; the best head outlined."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("induction_grid")
        self.setMinimumSize(180, 120)
        self.data: InductionData | None = None

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt's name
        p = QPainter(self)
        ink = self.palette().color(QPalette.ColorRole.WindowText)
        p.setPen(ink)
        if self.data is None:
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "prefix matching, per head")
            return
        scores = self.data.prefix_matching  # [layers, H]
        layers, heads = scores.shape
        names = [f"L{layer + 1} {kind}" for layer, kind in enumerate(self.data.layer_kinds)]
        label = max(p.fontMetrics().horizontalAdvance(name) for name in names) + 8  # none cut
        top = p.fontMetrics().lineSpacing() + 4
        cell_w = (self.width() - label) / heads
        cell_h = (self.height() - top) / layers
        for h in range(heads):
            p.drawText(QRectF(label + h * cell_w, 0, cell_w, top), Qt.AlignmentFlag.AlignCenter, f"h{h}")
        best_layer, best_head, _ = self.data.best
        for layer in range(layers):
            y = top + layer * cell_h
            p.setPen(ink)
            right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
            p.drawText(QRectF(0, y, label - 4, cell_h), right, names[layer])
            for h in range(heads):
                value = float(scores[layer, h])
                rgb = lookup_table()[int(round(255 * min(max(value, 0.0), 1.0)))]
                cell = QRectF(label + h * cell_w + 1, y + 1, cell_w - 2, cell_h - 2)
                p.fillRect(cell, QColor(int(rgb[0]), int(rgb[1]), int(rgb[2])))
                p.setPen(QColor("#ffffff") if value > 0.5 else QColor("#000000"))
                p.drawText(cell, Qt.AlignmentFlag.AlignCenter, f"{value:.2f}")
                if (layer + 1, h) == (best_layer, best_head):
                    p.setPen(ink)
                    p.drawRect(cell.adjusted(-1, -1, 1, 1))


class InductionView(QWidget):
    """A button, the losses on the two copies, and the grid of every head's score."""

    def __init__(self, controller: Controller, jobs: Jobs, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("induction_view")
        self._controller, self._jobs = controller, jobs
        self.run_button = QPushButton(f"Repeat {REPEATED} random tokens", objectName="induction_run")
        self.run_button.setToolTip("Show the model random tokens twice and find the heads that copy")
        self.cancel_button = QPushButton("Cancel", objectName="induction_cancel")
        self.progress = QProgressBar(objectName="induction_progress")
        self.summary = QLabel(objectName="induction_summary", wordWrap=True)
        self.grid = ScoreGrid()
        self.run_button.setAccessibleName("Find induction heads")
        self.cancel_button.setAccessibleName("Cancel the search")
        self.cancel_button.setToolTip("Stop the search; nothing is shown half done")
        layout = QVBoxLayout(self)
        row = nested(layout, QHBoxLayout())
        for widget in (self.run_button, self.cancel_button, self.progress):
            row.addWidget(widget)
        row.addStretch(1)
        layout.addWidget(self.summary)
        layout.addWidget(self.grid, 1)
        self.run_button.clicked.connect(self.run)
        self.cancel_button.clicked.connect(self.cancel)
        self.controls = JobControls(jobs, JobKind.induction, self.run_button, self.cancel_button,
                                    self.progress)
        jobs.done.connect(self._on_done)
        jobs.failed.connect(self._on_failed)

    def run(self) -> None:
        model = model_named(self._controller.config.weights)
        if model is None or not model.causal:
            self.summary.setText("Choose a trained decoder under Weights to look for its induction heads.")
            return
        self.controls.started(self._jobs.submit(JobKind.induction, _induction, model.key, REPEATED,
                                                cancellable=True))
        self.summary.setText(f"Reading {REPEATED} random tokens twice through every layer…")

    def cancel(self) -> None:
        self.controls.cancel()
        self.summary.setText("Cancelled.")

    def clear(self) -> None:
        """Another model: its search (running or done) is not this one's; back to the start."""
        if not self.run_button.isEnabled():  # a search under way: it was the other model's
            self.controls.cancel()
        self.summary.setText("")
        self.grid.data = None
        self.grid.update()

    def _on_done(self, done: JobDone) -> None:
        if done.kind != JobKind.induction:
            return
        # loaded by the job that made the answer; at start-up it would bring numpy in
        from mha_explorer.core.display.decoder import InductionData

        if not isinstance(done.result, InductionData):
            return
        self.controls.finish()
        d = done.result
        layer, head, score = d.best
        self.summary.setText(
            f"Loss on the first copy {d.loss_first:.2f} nats, on the second {d.loss_second:.2f}: the "
            f"model copies. Strongest induction head: layer {layer}, head {head} ({score:.2f} of its "
            "weight on the token after the earlier occurrence).")
        self.grid.data = d
        self.grid.update()

    def _on_failed(self, failed: JobFailed) -> None:
        if failed.kind == JobKind.induction:
            self.controls.finish()
            self.summary.setText(f"Not computed: {failed.message}")
