"""One click shows a trained decoder's induction heads: 50 random tokens, then the same 50
again. The model cannot predict the first copy; an induction head finds where the current
token occurred before and copies what followed, so the second copy's loss collapses. Every
head's prefix-matching score (its weight on the token after the earlier occurrence) is drawn
as a layers × heads grid, local and global layers told apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPalette
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from mha_explorer.core.display.colors import ink_on
from mha_explorer.core.models.catalog import model_named
from mha_explorer.qt.colormaps import lookup_table
from mha_explorer.qt.drawn import painted_text
from mha_explorer.qt.job_controls import JobControls
from mha_explorer.qt.jobs import JobDone, JobFailed, JobKind
from mha_explorer.qt.nesting import nested
from mha_explorer.qt.picture import DrawnShape, DrawnText

if TYPE_CHECKING:
    from mha_explorer.core.display.decoder import InductionData
    from mha_explorer.qt.controller import Controller
    from mha_explorer.qt.jobs import Jobs

REPEATED = 50  # random tokens, each shown twice


def _induction(model_key, n, *, cancel, progress):
    from mha_explorer.core.display.decoder import induction  # torch, on the jobs thread

    return induction(model_key, n, cancel=cancel, progress=progress)


CENTRE = int(Qt.AlignmentFlag.AlignCenter)
RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)


@dataclass(frozen=True)
class Cell:
    """A head's square: its score's colour, and the score written in the ink that reads on it."""

    box: QRectF
    fill: QColor
    text: str
    ink: QColor
    best: bool


class ScoreGrid(QWidget):
    """layers × heads cells, each with its score written in it (black or white, whichever
    reads on the cell's colour); the best head outlined."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("induction_grid")
        self.setMinimumSize(180, 120)
        self.data: InductionData | None = None

    def names(self) -> list[tuple[str, QRectF, int]]:
        """The heads' names over the columns and the layers' beside the rows: (text, box, flags)."""
        if self.data is None:
            return [("prefix matching, per head", QRectF(self.rect()), CENTRE)]
        heads = self.data.prefix_matching.shape[1]
        label, top, cell_w, cell_h = self._geometry()
        return ([(f"h{h}", QRectF(label + h * cell_w, 0, cell_w, top), CENTRE) for h in range(heads)]
                + [(name, QRectF(0, top + layer * cell_h, label - 4, cell_h), RIGHT)
                   for layer, name in enumerate(self._layer_names())])

    def cells(self) -> list[Cell]:
        if self.data is None:
            return []
        scores = self.data.prefix_matching  # [layers, H]
        label, top, cell_w, cell_h = self._geometry()
        best = self.data.best[:2]
        layers, heads = scores.shape
        cells = []
        for layer in range(layers):
            for h in range(heads):
                value = float(scores[layer, h])
                rgb = lookup_table()[int(round(255 * min(max(value, 0.0), 1.0)))]
                fill = QColor(int(rgb[0]), int(rgb[1]), int(rgb[2]))
                box = QRectF(label + h * cell_w + 1, top + layer * cell_h + 1, cell_w - 2, cell_h - 2)
                cells.append(Cell(box, fill, f"{value:.2f}", QColor(ink_on(fill.name())),
                                  (layer + 1, h) == best))
        return cells

    def _layer_names(self) -> list[str]:
        return [f"L{layer + 1} {kind}" for layer, kind in enumerate(self.data.layer_kinds)]

    def _geometry(self) -> tuple[float, float, float, float]:
        """(the layers' names' width, the heads' names' height, a cell's width and height)."""
        metrics = QFontMetricsF(self.font())
        layers, heads = self.data.prefix_matching.shape
        label = max(metrics.horizontalAdvance(name) for name in self._layer_names()) + 8  # none cut
        top = metrics.lineSpacing() + 4
        return label, top, (self.width() - label) / heads, (self.height() - top) / layers

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt's name
        p = QPainter(self)
        ink = self.palette().color(QPalette.ColorRole.WindowText)
        p.setPen(ink)
        for text, box, flags in self.names():
            p.drawText(box, flags, text)
        for cell in self.cells():
            p.fillRect(cell.box, cell.fill)
            p.setPen(cell.ink)
            p.drawText(cell.box, CENTRE, cell.text)
            if cell.best:
                p.setPen(ink)
                p.drawRect(cell.box.adjusted(-1, -1, 1, 1))
        p.end()

    # what a picture check reads: the numbers sit on their cells by design, on a fill
    # chosen for them, so a cell is the ground of its number rather than a tensor under it
    def drawn_texts(self) -> list[DrawnText]:
        if not self.isVisible():
            return []
        return ([painted_text(self, text, box, "induction grid", flags=flags)
                 for text, box, flags in self.names()]
                + [painted_text(self, c.text, c.box, "induction grid", flags=CENTRE, ink=c.ink,
                                ground=c.fill) for c in self.cells()])

    def drawn_shapes(self) -> list[DrawnShape]:
        return []



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
