"""A run button, a Cancel button and a progress bar bound to one kind of job on the jobs
thread: the Run button waits while the job runs, the bar follows it, and both come back
however it ends — done, failed, or cancelled from here or from the status bar."""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QAbstractButton, QProgressBar

from mha_explorer.qt.jobs import Job, JobKind, JobProgress, Jobs


class JobControls(QObject):
    def __init__(self, jobs: Jobs, kind: JobKind, run: QAbstractButton, cancel: QAbstractButton,
                 bar: QProgressBar) -> None:
        super().__init__(run)
        self._jobs, self._kind = jobs, kind
        self._run, self._cancel, self._bar = run, cancel, bar
        self._id = 0  # the job these controls wait for
        bar.setRange(0, 1000)
        cancel.setEnabled(False)
        bar.hide()
        jobs.progressed.connect(self._on_progress)
        jobs.cancelled.connect(self._on_cancelled)

    def started(self, job_id: int) -> None:
        """Call with the id ``Jobs.submit`` returned."""
        self._id = job_id
        self._run.setEnabled(False)
        self._cancel.setEnabled(True)
        self._bar.setValue(0)
        self._bar.show()

    def cancel(self) -> None:
        self._jobs.cancel(self._kind)  # it stops between its pieces; its answer is dropped
        self.finish()

    def finish(self) -> None:
        self._run.setEnabled(True)
        self._cancel.setEnabled(False)
        self._bar.hide()

    def _on_progress(self, progress: JobProgress) -> None:
        if progress.kind == self._kind:
            self._bar.setValue(int(1000 * progress.fraction))

    def _on_cancelled(self, job: Job) -> None:
        if job.kind == self._kind and job.id == self._id:  # an older one's late word changes nothing
            self.finish()
