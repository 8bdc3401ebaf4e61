"""Work beside the engine run, on the same worker thread: the trained layers' maps,
the decode steps and the tiles.

A job is a plain function of plain arguments (a core function that may import
torch) and returns numpy arrays and dicts. Each kind of job keeps only its
newest request: an older one is skipped before it starts, and a result that
arrives after a newer request was made is dropped, so a view never shows the
answer to a question nobody is asking any more.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QThread, Signal, Slot

from mha_explorer.core.config import ConfigError


@dataclass(frozen=True)
class SideJob:
    id: int
    kind: str
    work: Callable[..., Any]
    args: tuple[Any, ...] = ()


class SideWorker(QObject):
    """Lives on the worker thread; runs one job at a time, skipping stale ones."""

    finished = Signal(str, int, object)  # kind, id, result
    failed = Signal(str, int, str)  # kind, id, message for a person

    def __init__(self) -> None:
        super().__init__()
        self._latest: dict[str, int] = {}
        self._lock = threading.Lock()

    def supersede(self, kind: str, job_id: int) -> None:
        with self._lock:
            self._latest[kind] = max(self._latest.get(kind, 0), job_id)

    def stale(self, kind: str, job_id: int) -> bool:
        with self._lock:
            return job_id < self._latest.get(kind, 0)

    @Slot(object)
    def run(self, job: SideJob) -> None:
        if self.stale(job.kind, job.id):
            return
        try:
            result = job.work(*job.args)
        except ConfigError as exc:
            self.failed.emit(job.kind, job.id, exc.message)
        except Exception as exc:  # noqa: BLE001 - every fault becomes a message
            self.failed.emit(job.kind, job.id, f"{type(exc).__name__}: {exc}")
        else:
            self.finished.emit(job.kind, job.id, result)


class SideJobs(QObject):
    """The GUI side: ``submit(kind, work, *args)``; ``done(kind, result)`` or
    ``failed(kind, message)`` for the newest job of each kind only."""

    done = Signal(str, object)
    failed = Signal(str, str)
    _send = Signal(object)

    def __init__(self, thread: QThread, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._ids: dict[str, int] = {}
        self._worker = SideWorker()
        self._worker.moveToThread(thread)
        thread.finished.connect(self._worker.deleteLater)
        self._send.connect(self._worker.run)
        self._worker.finished.connect(self._on_finished)
        self._worker.failed.connect(self._on_failed)

    def submit(self, kind: str, work: Callable[..., Any], *args: Any) -> int:
        job_id = self._ids.get(kind, 0) + 1
        self._ids[kind] = job_id
        self._worker.supersede(kind, job_id)
        self._send.emit(SideJob(job_id, kind, work, args))
        return job_id

    def pending(self, kind: str) -> int:
        """The id of the newest job of ``kind`` (0: none yet)."""
        return self._ids.get(kind, 0)

    def _on_finished(self, kind: str, job_id: int, result: object) -> None:
        if job_id == self._ids.get(kind):
            self.done.emit(kind, result)

    def _on_failed(self, kind: str, job_id: int, message: str) -> None:
        if job_id == self._ids.get(kind):
            self.failed.emit(kind, message)
