"""What the window asks the engine for, and the one place it calls the engine.

``run_engine`` runs on the jobs' thread (qt/jobs.py): a ``ComputeRequest`` becomes engine
arguments, and torch is imported there, never on the GUI thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.stages.trace import Trace


@dataclass(frozen=True)
class ComputeRequest:
    config: MHAConfig
    show_batch: int = 0
    show_rows_from: int = 0
    budget_bytes: int | None = None


# (request, cancel, progress) -> Trace: what the window's trace job calls
RunFunction = Callable[[ComputeRequest, Callable[[], bool], Callable[[float], None]], Trace]


def load_engine():
    from mha_explorer.core.engine import runner  # imports torch, on the calling thread

    return runner


def warm_up() -> float:
    """Import torch (and the engine); the seconds it took."""
    start = time.perf_counter()
    load_engine()
    return time.perf_counter() - start


def run_engine(request: ComputeRequest, cancel: Callable[[], bool],
               progress: Callable[[float], None]) -> Trace:
    """The one place the window calls the engine: a request becomes engine arguments."""
    return load_engine().run(
        request.config, budget_bytes=request.budget_bytes, show_batch=request.show_batch,
        show_rows_from=request.show_rows_from, cancel=cancel, progress=progress,
    )
