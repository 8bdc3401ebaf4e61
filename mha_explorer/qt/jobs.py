"""The one thread where the window's torch work runs, and the one way to ask it for work.

A job is a plain function of plain arguments (a core function that may import torch); what
crosses the thread are typed values: ``Job`` going out, ``JobDone``, ``JobFailed`` and
``JobProgress`` coming back (and ``began`` when a job really starts, for a progress display).
``progress(fraction, text="")`` may name the step under way in a few words. Each kind of job
keeps only its newest request (latest wins): an older one is skipped before it
starts, cancelled between its pieces while it runs (when it takes ``cancel``), and its answer
is dropped if it still arrives, so a view never shows the answer to a question nobody is asking
any more. Errors are emitted, never raised.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from PySide6.QtCore import QObject, QThread, Signal, Slot

from mha_explorer.core.errors import Cancelled, ConfigError

SHUTDOWN_WAIT_MS = 500  # a job checks ``cancel`` more often than this
DEAF_WAIT_MS = 50  # for a job that cannot hear cancel: long enough for one about to end
_finishing: set[QThread] = set()  # threads let go by a closed window, still ending a piece


@atexit.register
def _wait_for_finishing() -> None:
    """The process ends only after them: a QThread destroyed while it runs aborts."""
    for thread in list(_finishing):
        thread.wait()


class JobKind(str, Enum):
    """The window's kinds of work; each keeps only its newest request."""

    warm_up = "warm_up"  # import torch before the first trace is needed
    reading = "reading"  # a text read as a trained model's tokens (its tokenizer made on first use)
    models = "models"  # which trained models' packages are installed (their install records)
    trace = "trace"  # the engine's run of the config on screen
    notes = "notes"  # the stage header's numbers from the trace (√d_k at scores and softmax)
    layers = "layers"  # a trained model's every layer (the Layers dock)
    ablation = "ablation"  # one layer's heads switched off in turn
    decode = "decode"  # generation with a KV cache (the Generation dock)
    tiles = "tiles"  # tiled attention (the Generation dock)
    generate = "generate"  # a trained decoder writing with its real KV cache
    induction = "induction"  # a trained decoder on repeated random tokens
    compare = "compare"  # every trained model on one text (the Compare window)
    export = "export"  # the window's pictures encoded and written, and its tables
    head_effects = "head_effects"  # a decoder's heads switched off in turn, by the loss
    patching = "patching"  # a decoder's heads patched from a clean prompt into a corrupted one
    lens = "lens"  # a decoder's residual stream read after every layer


@dataclass(frozen=True)
class Job:
    kind: str
    id: int
    work: Callable[..., Any]
    args: tuple[Any, ...] = ()
    cancellable: bool = False  # the work takes cancel= and progress= keywords


@dataclass(frozen=True)
class JobDone:
    kind: str
    id: int
    result: Any


@dataclass(frozen=True)
class JobFailed:
    kind: str
    id: int
    message: str  # for a person


@dataclass(frozen=True)
class JobProgress:
    kind: str
    id: int
    fraction: float
    text: str = ""  # what the job is doing now ("reading layer 3 of 6…"); "" says nothing new


class JobRunner(QObject):
    """Lives on the worker thread; runs one job at a time, skipping stale ones."""

    began = Signal(object)  # Job, as it starts (a stale one never does)
    finished = Signal(object)  # JobDone
    failed = Signal(object)  # JobFailed
    cancelled = Signal(object)  # Job
    progressed = Signal(object)  # JobProgress

    def __init__(self) -> None:
        super().__init__()
        self._latest: dict[str, int] = {}
        self._lock = threading.Lock()
        self.in_flight: Job | None = None  # the job running now (read from the GUI thread)

    def supersede(self, kind: str, job_id: int) -> None:
        """Called from the GUI thread: anything of ``kind`` older than ``job_id`` is stale."""
        with self._lock:
            self._latest[kind] = max(self._latest.get(kind, 0), job_id)

    def stale(self, kind: str, job_id: int) -> bool:
        with self._lock:
            return job_id < self._latest.get(kind, 0)

    @Slot(object)
    def run(self, job: Job) -> None:
        if self.stale(job.kind, job.id):
            self.cancelled.emit(job)
            return
        self.in_flight = job
        self.began.emit(job)
        try:
            if job.cancellable:
                result = job.work(*job.args, cancel=lambda: self.stale(job.kind, job.id),
                                  progress=lambda f, text="": self.progressed.emit(
                                      JobProgress(job.kind, job.id, f, text)))
            else:
                result = job.work(*job.args)
        except Cancelled:
            self.cancelled.emit(job)
        except ConfigError as exc:
            self.failed.emit(JobFailed(job.kind, job.id, exc.message))
        except Exception as exc:  # noqa: BLE001 - every fault becomes a message
            self.failed.emit(JobFailed(job.kind, job.id, f"{type(exc).__name__}: {exc}"))
        else:
            self.finished.emit(JobDone(job.kind, job.id, result))
        finally:
            self.in_flight = None


class Jobs(QObject):
    """The GUI side: ``submit(kind, work, *args)``; ``done(JobDone)``, ``failed(JobFailed)``,
    ``progressed(JobProgress)`` and ``cancelled(Job)`` for the newest job of each kind only;
    ``dropped(kind)`` at once when ``cancel(kind)`` is asked (the thread hears it between the
    job's pieces, or when a job queued behind another would start)."""

    began = Signal(object)  # Job: the newest of its kind has started on the thread
    dropped = Signal(str)  # a kind's jobs cancelled from the GUI thread, now
    done = Signal(object)
    failed = Signal(object)
    progressed = Signal(object)
    cancelled = Signal(object)
    _send = Signal(object)

    def __init__(self, parent: QObject | None = None, name: str = "mha-explorer-compute") -> None:
        super().__init__(parent)
        self._ids: dict[str, int] = {}
        self._next_id = 0
        self._unanswered = 0  # jobs sent to the thread that have not said how they ended
        self.thread = QThread(self)
        self.thread.setObjectName(name)
        self._runner = JobRunner()
        self._runner.moveToThread(self.thread)
        self.thread.finished.connect(self._runner.deleteLater)
        self._send.connect(self._runner.run)
        self._runner.began.connect(self._on_began)
        self._runner.finished.connect(self._on_finished)
        self._runner.failed.connect(self._on_failed)
        self._runner.progressed.connect(self._on_progressed)
        self._runner.cancelled.connect(self._on_cancelled)

    def start(self) -> None:
        if not self.thread.isRunning():
            self.thread.start()

    def is_running(self) -> bool:
        return self.thread.isRunning()

    def submit(self, kind: str, work: Callable[..., Any], *args: Any, cancellable: bool = False) -> int:
        """Queue ``work(*args)`` (with cancel= and progress= when ``cancellable``); the job
        supersedes every earlier one of ``kind``. Returns its id."""
        self._next_id += 1  # one counter for all kinds: ids also order kinds against each other
        job_id = self._ids[kind] = self._next_id
        self._runner.supersede(kind, job_id)
        self._unanswered += 1
        self._send.emit(Job(kind, job_id, work, args, cancellable))
        return job_id

    @property
    def idle(self) -> bool:
        """Whether every job submitted has ended (done, failed or cancelled) and said so."""
        return self._unanswered == 0

    def cancel(self, kind: str) -> None:
        """Stop the job of ``kind`` in flight (between its pieces) and drop its answer."""
        self._next_id += 1
        self._ids[kind] = self._next_id
        self._runner.supersede(kind, self._next_id)
        self.dropped.emit(kind)

    def latest(self, kind: str) -> int:
        """The id of the newest job of ``kind`` (0: none yet)."""
        return self._ids.get(kind, 0)

    def shutdown(self) -> bool:
        """Cancel every job and stop the thread; True when it stopped within SHUTDOWN_WAIT_MS.
        Every long job checks ``cancel`` between pieces much shorter than that; a piece that
        cannot hear it (importing torch at the start takes seconds) is not waited for: the
        thread is let go to end it alone, the window closes now, and the process waits for
        the thread only as it exits."""
        for kind in list(self._ids):
            self.cancel(kind)
        if not self.thread.isRunning():
            return True
        self.thread.quit()
        running = self._runner.in_flight
        deaf = running is not None and not running.cancellable  # waiting would not shorten it
        if self.thread.wait(DEAF_WAIT_MS if deaf else SHUTDOWN_WAIT_MS):
            return True
        # kept (never dropped from within its own signals: the last reference going while it
        # still runs would destroy it); outlives this object and its window
        _finishing.add(self.thread)
        self.thread.setParent(None)
        return False

    def _current(self, kind: str, job_id: int) -> bool:
        return job_id == self._ids.get(kind)

    def _on_began(self, job: Job) -> None:
        if self._current(job.kind, job.id):
            self.began.emit(job)

    def _on_finished(self, done: JobDone) -> None:
        self._unanswered -= 1
        if self._current(done.kind, done.id):
            self.done.emit(done)

    def _on_failed(self, failed: JobFailed) -> None:
        self._unanswered -= 1
        if self._current(failed.kind, failed.id):
            self.failed.emit(failed)

    def _on_progressed(self, progress: JobProgress) -> None:
        if self._current(progress.kind, progress.id):
            self.progressed.emit(progress)

    def _on_cancelled(self, job: Job) -> None:
        self._unanswered -= 1
        self.cancelled.emit(job)
