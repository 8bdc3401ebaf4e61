"""What the window asks the engine for, and the one place it calls the engine.

``run_engine`` runs on the jobs' thread (qt/jobs.py): a ``ComputeRequest`` becomes engine
arguments, and torch is imported there, never on the GUI thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.memory import picked_rows
from mha_explorer.core.stages.trace import Trace
from mha_explorer.core.units import likely_duration
from mha_explorer.core.variants.registry import family_of

# Every row of a sequence longer than its maps show is computed only when that likely takes
# at most this long. The trace's bar appears after 0.3 s; a wait of up to two seconds with a
# bar passes as the ordinary cost of an edit, while a longer one would be spent on rows no
# map draws (the maps show at most SHOWN_MAX_ROWS of them). Past it the maps' rows alone are
# computed, exactly, and a stage after the softmax offers every row with its likely time.
# The estimate (engine.speed: the plan's FLOPs at the measured matmul speed) is a lower bound:
# on a 2-core CPU a windowed run of T = 8,192 estimated at 1.6 s took 3.3 s.
ROWS_AFTER_S = 2.0


@dataclass(frozen=True)
class ComputeRequest:
    config: MHAConfig
    show_batch: int = 0
    show_rows_from: int = 0
    budget_bytes: int | None = None
    # None: every row, whatever it costs; else the seconds of an every-row run past which a
    # long sequence computes only the rows its maps show (see ROWS_AFTER_S)
    rows_after_s: float | None = None


def draws_picked_rows(cfg: MHAConfig) -> bool:
    """Whether ``cfg``'s maps can show only some of its query rows (a long sequence) and
    its family can compute just those; a family computed whole never can."""
    return not family_of(cfg).computed_whole and len(picked_rows(cfg)) < cfg.T


# progress(fraction, words=""): how far the run is, and now and then what it is doing
Progress = Callable[..., None]
# (request, cancel, progress) -> Trace: what the window's trace job calls
RunFunction = Callable[[ComputeRequest, Callable[[], bool], Progress], Trace]


def load_engine():
    from mha_explorer.core.engine.libraries import map_torch_libraries

    map_torch_libraries()  # the slowest part of torch's import, with the GUI thread free to run
    from mha_explorer.core.engine import runner  # imports torch, on the calling thread

    return runner


def warm_up() -> float:
    """Import torch (and the engine); the seconds it took."""
    start = time.perf_counter()
    load_engine()
    return time.perf_counter() - start


def run_engine(request: ComputeRequest, cancel: Callable[[], bool], progress: Progress) -> Trace:
    """The one place the window calls the engine: a request becomes engine arguments. A
    long sequence whose every-row run would likely outlast ``rows_after_s`` computes only
    the rows its maps show (the engine's mode "rows"); the trace carries that likely time.
    A long sequence's run says first which rows it computes (and every row's likely time)."""
    engine = load_engine()
    cfg = request.config
    fields = dict(budget_bytes=request.budget_bytes, show_batch=request.show_batch, cancel=cancel,
                  progress=progress)
    if not draws_picked_rows(cfg):  # the maps show every row: nothing to choose
        return engine.run(cfg, show_rows_from=request.show_rows_from, **fields)
    from mha_explorer.core.engine.speed import every_row_seconds  # torch

    seconds = every_row_seconds(cfg, engine.resolve_device(cfg.device))
    if request.rows_after_s is not None and seconds > request.rows_after_s:
        progress(0.0, f"computing the {len(picked_rows(cfg)):,} query rows the maps show, "
                      f"of {cfg.T:,}…")
        trace = engine.run(cfg, mode="rows", **fields)
        trace.every_row_seconds = seconds
        return trace
    if request.rows_after_s is None:  # asked for every row, whatever it costs
        progress(0.0, f"computing every one of the {cfg.T:,} query rows "
                      f"({likely_duration(seconds)} on this machine)…")
    return engine.run(cfg, show_rows_from=request.show_rows_from, **fields)
