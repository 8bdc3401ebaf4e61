"""The one thread where torch runs.

Requests carry an id; a request that is no longer the latest is skipped before
it starts and cancelled between blocks while it runs, so only the newest
result ever reaches the controller. Errors are emitted, never raised.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Signal, Slot

from mha_explorer.core.config import ConfigError, MHAConfig


@dataclass(frozen=True)
class ComputeRequest:
    id: int
    config: MHAConfig
    show_batch: int = 0
    show_rows_from: int = 0
    budget_bytes: int | None = None
    options: dict = field(default_factory=dict)


class ComputeWorker(QObject):
    """Lives on a QThread; ``compute`` is invoked through a queued signal."""

    started = Signal(int)
    progressed = Signal(int, float)
    finished = Signal(int, object)  # request id, Trace
    failed = Signal(int, str)  # request id, message for a person
    cancelled = Signal(int)
    engine_loaded = Signal(float)  # seconds spent importing torch

    def __init__(self) -> None:
        super().__init__()
        self._latest = 0
        self._lock = threading.Lock()
        self._engine = None

    def supersede(self, request_id: int) -> None:
        """Called from the GUI thread: anything older than request_id is stale."""
        with self._lock:
            self._latest = max(self._latest, request_id)

    def _stale(self, request_id: int) -> bool:
        with self._lock:
            return request_id < self._latest

    def _load_engine(self):
        if self._engine is None:
            t0 = time.perf_counter()
            from mha_explorer.core import engine  # imports torch, on this thread only

            self._engine = engine
            self.engine_loaded.emit(time.perf_counter() - t0)
        return self._engine

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
        self.started.emit(request.id)
        try:
            engine = self._load_engine()
            trace = engine.run(
                request.config,
                budget_bytes=request.budget_bytes,
                show_batch=request.show_batch,
                show_rows_from=request.show_rows_from,
                cancel=lambda: self._stale(request.id),
                progress=lambda f: self.progressed.emit(request.id, f),
                **request.options,
            )
        except ConfigError as exc:
            self.failed.emit(request.id, exc.message)
        except Exception as exc:  # noqa: BLE001 - every fault becomes a message
            if self._engine is not None and isinstance(exc, self._engine.Cancelled):
                self.cancelled.emit(request.id)
            else:
                self.failed.emit(request.id, f"{type(exc).__name__}: {exc}")
        else:
            self.finished.emit(request.id, trace)
