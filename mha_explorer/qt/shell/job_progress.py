"""The status bar's word on the window's other work: which jobs are running (the tiles, a
model writing, every layer being read), how far they are, and a Cancel that stops them.

The trace on screen has its own bar (status_bar.py); this one covers every other kind of job.
A job appears only once it has run for SHOW_AFTER_MS, so quick ones never flicker, and
disappears when it finishes, fails or is cancelled.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QPushButton, QWidget

from mha_explorer.qt.jobs import Job, JobDone, JobFailed, JobKind, JobProgress, Jobs
from mha_explorer.qt.shell.elided_label import ElidedLabel

SHOW_AFTER_MS = 500  # a job shorter than this is never announced
WORDS = {  # what a person is waiting for, per kind of job
    JobKind.layers: "reading every layer…",
    JobKind.ablation: "switching each head off…",
    JobKind.decode: "decoding step by step…",
    JobKind.tiles: "computing the tiles…",
    JobKind.generate: "the model is writing…",
    JobKind.induction: "looking for induction heads…",
    JobKind.export: "exporting…",
    JobKind.head_effects: "switching each head off…",
    JobKind.patching: "patching each head…",
    JobKind.lens: "reading every layer's stream…",
}
# the trace has the status bar's main progress bar, and its line says when it waits for torch;
# the header's numbers say "working out" where they will appear
OWN_DISPLAY = {JobKind.trace, JobKind.warm_up, JobKind.notes}


def words_for(kind: str) -> str:
    return WORDS.get(kind, f"computing {kind}…")


class JobProgressView(QWidget):
    """What runs besides the trace: its words, a bar, and Cancel for the jobs that take it."""

    def __init__(self, jobs: Jobs, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("job_progress")
        self._jobs = jobs
        self._running: dict[str, Job] = {}  # kind -> the job in flight
        self._fraction: dict[str, float] = {}
        self._doing: dict[str, str] = {}  # kind -> the step it named last ("reading layer 3 of 6…")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.label = ElidedLabel(8)  # cut with "…" when the trace's own bar needs the room too
        self.label.setObjectName("job_words")
        self.label.setAccessibleName("Work in progress")
        self.bar = QProgressBar(objectName="job_bar")
        self.bar.setAccessibleName("Progress of the work")
        self.bar.setMaximumWidth(120)
        self.cancel_button = QPushButton("Cancel", objectName="cancel_jobs")
        self.cancel_button.setAccessibleName("Cancel this work")
        self.cancel_button.setToolTip("Stop it now; what is on screen stays")
        self.cancel_button.clicked.connect(self.cancel)
        for widget in (self.label, self.bar, self.cancel_button):
            row.addWidget(widget)
        self._reveal = QTimer(self, singleShot=True, interval=SHOW_AFTER_MS)
        self._reveal.timeout.connect(self._refresh)
        jobs.began.connect(self._on_began)
        jobs.progressed.connect(self._on_progress)
        jobs.done.connect(self._on_end)
        jobs.failed.connect(self._on_end)
        jobs.cancelled.connect(self._on_cancelled)
        self.hide()

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds of work announced now (empty while hidden)."""
        return tuple(self._running) if self.isVisible() else ()

    def cancel(self) -> None:
        for kind, job in list(self._running.items()):
            if job.cancellable:
                self._jobs.cancel(kind)  # it stops between its pieces; its answer is dropped
                self._forget(kind)
        self._refresh()

    def _on_began(self, job: Job) -> None:
        if job.kind in OWN_DISPLAY:
            return
        self._running[job.kind] = job
        self._fraction.pop(job.kind, None)
        self._doing.pop(job.kind, None)
        if self.isVisible():
            self._refresh()
        else:
            self._reveal.start()

    def _on_progress(self, progress: JobProgress) -> None:
        if progress.kind in self._running:
            self._fraction[progress.kind] = progress.fraction
            if progress.text:
                self._doing[progress.kind] = progress.text
            if self.isVisible():
                self._refresh()

    def _on_end(self, answer: JobDone | JobFailed) -> None:
        job = self._running.get(answer.kind)
        if job is not None and job.id == answer.id:
            self._forget(answer.kind)
            self._refresh()

    def _on_cancelled(self, job: Job) -> None:
        self._on_end(JobFailed(job.kind, job.id, "cancelled"))

    def _forget(self, kind: str) -> None:
        self._running.pop(kind, None)
        self._fraction.pop(kind, None)
        self._doing.pop(kind, None)

    def _refresh(self) -> None:
        if not self._running:
            self._reveal.stop()
            self.hide()
            return
        self.label.setText(" · ".join(self._doing.get(kind) or words_for(kind) for kind in self._running))
        known = [self._fraction[k] for k in self._running if k in self._fraction]
        if known:
            self.bar.setRange(0, 100)
            self.bar.setValue(int(round(100 * min(known))))
        else:
            self.bar.setRange(0, 0)  # busy: the job says nothing of how far it is
        self.cancel_button.setVisible(any(job.cancellable for job in self._running.values()))
        self.show()
