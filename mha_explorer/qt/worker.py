"""The one thread where torch runs.

Requests carry an id; a request that is no longer the latest is skipped before
it starts and cancelled between blocks while it runs, so only the newest
result ever reaches the controller. Errors are emitted, never raised.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal, Slot

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.errors import Cancelled
from mha_explorer.core.stages.trace import Trace


@dataclass(frozen=True)
class ComputeRequest:
    id: int
    config: MHAConfig
    show_batch: int = 0
    show_rows_from: int = 0
    budget_bytes: int | None = None


# (request, cancel, progress) -> Trace: what the worker calls for each request
RunFunction = Callable[[ComputeRequest, Callable[[], bool], Callable[[float], None]], Trace]


def load_engine():
    from mha_explorer.core.engine import runner as engine  # imports torch, on the calling thread

    return engine


def run_engine(request: ComputeRequest, cancel: Callable[[], bool],
               progress: Callable[[float], None]) -> Trace:
    """The one place the window calls the engine: a request becomes engine arguments."""
    return load_engine().run(
        request.config, budget_bytes=request.budget_bytes, show_batch=request.show_batch,
        show_rows_from=request.show_rows_from, cancel=cancel, progress=progress,
    )


class ComputeWorker(QObject):
    """Lives on a QThread; ``compute`` is invoked through a queued signal.

    ``run`` is what computes a request (``run_engine`` unless a caller, such as a
    test, hands in another); it may raise anything: every fault becomes a message.
    """

    progressed = Signal(int, float)
    finished = Signal(int, object)  # request id, Trace
    failed = Signal(int, str)  # request id, message for a person
    cancelled = Signal(int)
    engine_loaded = Signal(float)  # seconds spent importing torch

    def __init__(self, run: RunFunction | None = None) -> None:
        super().__init__()
        self._latest = 0
        self._lock = threading.Lock()
        self._loaded = False
        self._run = run or run_engine

    def supersede(self, request_id: int) -> None:
        """Called from the GUI thread: anything older than request_id is stale."""
        with self._lock:
            self._latest = max(self._latest, request_id)

    def _stale(self, request_id: int) -> bool:
        with self._lock:
            return request_id < self._latest

    def _load_engine(self) -> None:
        if not self._loaded:
            t0 = time.perf_counter()
            load_engine()
            self._loaded = True
            self.engine_loaded.emit(time.perf_counter() - t0)

    @Slot()
    def warm_up(self) -> None:
        try:
            self._load_engine()
        except Exception as exc:  # a broken torch install must not kill the window
            self.failed.emit(0, f"could not load torch: {exc}")

    @Slot(object)
    def compute(self, request: ComputeRequest) -> None:
        if self._stale(request.id):
            self.cancelled.emit(request.id)
            return
        try:
            self._load_engine()
            trace = self._run(request, lambda: self._stale(request.id),
                              lambda f: self.progressed.emit(request.id, f))
        except Cancelled:
            self.cancelled.emit(request.id)
        except ConfigError as exc:
            self.failed.emit(request.id, exc.message)
        except Exception as exc:  # noqa: BLE001 - every fault becomes a message
            self.failed.emit(request.id, f"{type(exc).__name__}: {exc}")
        else:
            self.finished.emit(request.id, trace)
