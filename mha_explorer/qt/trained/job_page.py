"""A page of the Layers dock's What-if tab: inputs, Run, Cancel and a progress bar for one kind
of job on the jobs thread, a sentence on its answer, and what draws it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QSplitter, QVBoxLayout, QWidget

from mha_explorer.core.models.catalog import model_named
from mha_explorer.qt.job_controls import JobControls
from mha_explorer.qt.jobs import JobDone, JobFailed, JobKind
from mha_explorer.qt.nesting import nested
from mha_explorer.qt.scrolling import scroll_area

if TYPE_CHECKING:
    from mha_explorer.qt.controller import Controller
    from mha_explorer.qt.jobs import Jobs

NO_DECODER = "Choose a trained decoder under Weights to see what its heads do."
# lines of type the answer keeps at least: in a short dock the whole page scrolls (the dock's
# own area) rather than the answer shrinking to a slit of two rows under the inputs
ANSWER_LINES = 14


class JobPage(QWidget):
    """A page of the tab: a row of inputs with Run, Cancel and a progress bar, a sentence on the
    result, and what draws it (``body``, which scrolls on its own, so the words above it wrap at
    the width on screen however wide the pictures are). ``request()`` names the work,
    ``show(result)`` draws its answer."""

    head_chosen = Signal(int, int)
    KIND: JobKind
    RUN_TEXT = "Run"
    BUSY_TEXT = "Working…"

    def __init__(self, controller: Controller, jobs: Jobs, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._controller, self._jobs = controller, jobs
        name = self.KIND.value
        self.run_button = QPushButton(self.RUN_TEXT, objectName=f"{name}_run")
        self.cancel_button = QPushButton("Cancel", objectName=f"{name}_cancel")
        self.cancel_button.setToolTip("Stop it now; what is on screen stays")
        self.progress = QProgressBar(objectName=f"{name}_progress")
        self.summary = QLabel(objectName=f"{name}_summary", wordWrap=True)
        self.result: Any = None  # the last answer shown
        self.layout_ = QVBoxLayout(self)
        self.inputs = nested(self.layout_, QHBoxLayout())
        row = nested(self.layout_, QHBoxLayout())
        for widget in (self.run_button, self.cancel_button, self.progress):
            row.addWidget(widget)
        row.addStretch(1)
        self.layout_.addWidget(self.summary)
        content = QWidget()
        self.body = QVBoxLayout(content)
        self.body.setContentsMargins(0, 0, 0, 0)
        self.answer_area = scroll_area(content, sideways=True)
        self.layout_.addWidget(self.answer_area, 1)
        self._keep_answer_room()
        self.controls = JobControls(jobs, self.KIND, self.run_button, self.cancel_button, self.progress)
        self.run_button.clicked.connect(self.run)
        self.cancel_button.clicked.connect(self.cancel)
        jobs.done.connect(self._on_done)
        jobs.failed.connect(self._on_failed)

    def _keep_answer_room(self) -> None:
        self.answer_area.setMinimumHeight(ANSWER_LINES * self.fontMetrics().lineSpacing())

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.FontChange:  # presentation's larger type: room for as many lines
            self._keep_answer_room()
        super().changeEvent(event)

    def model_key(self) -> str | None:
        model = model_named(self._controller.config.weights)
        return model.key if model is not None and model.causal else None

    def run(self) -> None:
        key = self.model_key()
        if key is None:
            self.summary.setText(NO_DECODER)
            return
        work, args = self.request(key)
        self.controls.started(self._jobs.submit(self.KIND, work, *args, cancellable=True))
        self.summary.setText(self.BUSY_TEXT)

    def cancel(self) -> None:
        self.controls.cancel()
        self.summary.setText("Cancelled; nothing shown is half done.")

    def request(self, model_key: str) -> tuple[Any, tuple]:
        raise NotImplementedError

    def show(self, result: Any) -> None:  # noqa: A003 - the page's word for drawing an answer
        raise NotImplementedError

    def accepts(self, result: Any) -> bool:
        raise NotImplementedError

    def _on_done(self, done: JobDone) -> None:
        if done.kind == self.KIND and self.accepts(done.result):
            self.controls.finish()
            self.show(done.result)

    def _on_failed(self, failed: JobFailed) -> None:
        if failed.kind == self.KIND:
            self.controls.finish()
            self.summary.setText(f"Not computed: {failed.message}")


class SideBySide(QSplitter):
    """Views side by side while the width holds what they would like, one above the other when
    it does not (a dock on a small projector): nothing is squeezed below what it needs."""

    def __init__(self, *views: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        for view in views:
            self.addWidget(view)
        self.setChildrenCollapsible(False)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        wanted = sum(self.widget(i).sizeHint().width() for i in range(self.count()))
        side = Qt.Orientation.Horizontal if event.size().width() >= wanted else Qt.Orientation.Vertical
        turned = side != self.orientation()
        self.setOrientation(side)
        super().resizeEvent(event)
        if turned:
            self.fit()

    def fit(self) -> None:
        """Side by side, every view after the first gets the width it would like, the first the
        rest (one above the other, the heights are left to the splitter)."""
        if self.orientation() != Qt.Orientation.Horizontal:
            return
        rest = [self.widget(i).sizeHint().width() for i in range(1, self.count())]
        self.setSizes([max(self.width() - sum(rest), 0), *rest])
