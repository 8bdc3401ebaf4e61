"""The one object that owns the config, the current trace and the current stage.

Views take the controller in their constructor, connect to its signals there,
and only render. The plan (shapes, arithmetic, memory) is recomputed here on
every accepted edit, instantly and without torch; the trace follows from the
worker thread after a short debounce.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.config.edits import apply_edits
from mha_explorer.core.config.presets import get_preset
from mha_explorer.core.plan.build import Plan, build_plan
from mha_explorer.core.plan.memory import Estimate, MemoryBudgetError, estimate
from mha_explorer.core.stages.catalog import carry_stage
from mha_explorer.core.stages.trace import Trace, current_trace
from mha_explorer.core.text.tables import STAGE_LABELS
from mha_explorer.qt.budget import BudgetMixin
from mha_explorer.qt.compute import ROWS_AFTER_S, ComputeRequest, RunFunction, run_engine, warm_up
from mha_explorer.qt.jobs import Job, JobDone, JobFailed, JobKind, JobProgress, Jobs
from mha_explorer.qt.playback import BASE_STEP_MS, SPEEDS, PlaybackMixin
from mha_explorer.qt.staggered import StaggeredRefresh
from mha_explorer.qt.text_reading import ReadingMixin, needs_reading

DEBOUNCE_MS = 150


class Controller(BudgetMixin, PlaybackMixin, ReadingMixin, QObject):
    config_changed = Signal(object)  # MHAConfig, always valid
    validation_changed = Signal(object)  # ConfigError, or None once the input is valid again
    reading_changed = Signal(object)  # Reading: a text being read as a model's tokens; None: ended
    reading_progressed = Signal(float, str)  # how far the reading is, and what it does now
    reading_failed = Signal(str)  # why the text could not be read (the config in use stays)
    trace_ready = Signal(object)  # Trace of the current config
    trace_failed = Signal(str)
    compute_started = Signal()
    compute_progressed = Signal(float)
    compute_cancelled = Signal()  # the person stopped the run
    stage_changed = Signal(str)
    playing_changed = Signal(bool)
    speed_changed = Signal(float)
    batch_index_changed = Signal(int)
    head_changed = Signal(int)  # the query head the stage view shows
    engine_loaded = Signal(float)
    status_changed = Signal(str)

    def __init__(self, config: MHAConfig | None = None, *, budget_bytes: int | None = None,
                 run: RunFunction | None = None, rows_after_s: float | None = ROWS_AFTER_S,
                 parent: QObject | None = None) -> None:
        """``run`` replaces the engine call on the jobs' thread (see compute.run_engine).
        ``rows_after_s``: a long sequence whose every-row run would likely take longer computes
        only the rows its maps show (None: always every row); see compute.ROWS_AFTER_S."""
        super().__init__(parent)
        self._config = config or MHAConfig()
        # the views' costly reactions to an edit or a trace, one per event-loop turn
        self.later = StaggeredRefresh(self)
        self._plan = build_plan(self._config)
        self._error: ConfigError | None = None
        self._trace: Trace | None = None
        self._stage = self._plan.stage_ids[0]  # by id: the list varies with the config
        self._speed = 1.0
        self._batch_index = 0
        self._head = 0
        self._rows_from = 0
        self._budget = budget_bytes
        self.settings_warnings: list[str] = []  # bad environment values, said beside every result
        self._computing = False
        self._rows_after_s = rows_after_s
        self._every_row = False  # asked for every row of this config, whatever it costs

        self._debounce = QTimer(self, singleShot=True, interval=DEBOUNCE_MS)
        self._debounce.timeout.connect(self._on_debounce)
        self._pending = False
        self._play = QTimer(self)
        self._play.setTimerType(Qt.TimerType.PreciseTimer)  # a coarse timer drifts by 5 %
        self._play.timeout.connect(self._advance)

        # every torch job of the window runs on this one thread, newest request of a kind wins
        self.jobs = Jobs(self)
        self._run = run or run_engine
        self.jobs.done.connect(self._on_done)
        self.jobs.failed.connect(self._on_failed)
        self.jobs.cancelled.connect(self._on_cancelled)
        self.jobs.progressed.connect(self._on_progress)
        self.jobs.dropped.connect(self._on_reading_dropped)
        self._started = False
        self._warm_up_waits = False  # torch loads here after the early process's answer

    # lifecycle ---------------------------------------------------------------
    def start(self, compute: bool = True) -> None:
        """Start the worker thread, load torch there, and compute the first trace
        (unless ``compute`` is False: a restored config that may be costly waits
        for ``request_compute``)."""
        if self._started:
            return
        self._started = True
        self.jobs.start()
        # a run function whose first answer comes from a process that loaded torch beside the
        # window's start-up (qt/early_engine.py): the window's own torch loads after that answer
        elsewhere = compute and getattr(self._run, "first_elsewhere", False)
        if not elsewhere:
            if not compute:
                self._close_run()  # nothing to ask the early process for
            self.jobs.submit(JobKind.warm_up, warm_up)
        self._warm_up_waits = elsewhere
        if compute:
            self.request_compute(immediate=True)

    def _after_first_answer(self) -> None:
        """The window's own torch, once the early process's answer is drawn: loading it sooner
        would hold the interpreter lock while the first heatmaps draw."""
        if self._warm_up_waits:
            self._warm_up_waits = False
            self.later.schedule_last("warm_up", lambda: self.jobs.submit(JobKind.warm_up, warm_up))

    def shutdown(self) -> None:
        """Cancel every job and stop the thread; safe to call twice. Each job stops between
        pieces, so this waits about half a second at most (qt/jobs.py SHUTDOWN_WAIT_MS)."""
        self._play.stop()
        self._debounce.stop()
        self.later.stop()
        self.jobs.shutdown()  # a wait on the early process hears this cancel
        self._close_run()

    def _close_run(self) -> None:
        getattr(self._run, "close", lambda: None)()  # an early process still waiting, if any

    def is_running(self) -> bool:
        """Whether the compute thread is alive (started and not yet shut down)."""
        return self.jobs.is_running()

    # config --------------------------------------------------------------------
    @property
    def config(self) -> MHAConfig:
        return self._config

    @property
    def plan(self) -> Plan:
        return self._plan

    @property
    def error(self) -> ConfigError | None:
        return self._error

    def estimate(self) -> Estimate:
        return estimate(self._config)

    def update(self, **changes: Any) -> bool:
        """Apply edits; invalid ones are reported and the last valid state is kept. Edits
        made while a text is being read apply to the config waiting for it (text_reading)."""
        try:
            cfg = apply_edits(self._edit_base(), changes)
        except ConfigError as err:
            self._error = err
            self.validation_changed.emit(err)
            return False
        return self.set_config(cfg)

    def apply_preset(self, key: str) -> bool:
        try:
            cfg = get_preset(key).apply(self._config)
        except ConfigError as err:
            self._error = err
            self.validation_changed.emit(err)
            return False
        return self.set_config(cfg)

    def set_config(self, cfg: MHAConfig) -> bool:
        """Make ``cfg`` the config on screen; a trained model's words are first read as its
        tokens on the jobs thread (True: accepted, shown once read)."""
        if self._error is not None:
            self._error = None
            self.validation_changed.emit(None)
        self.cancel_reading()  # a newer config replaces the one waiting
        if needs_reading(cfg):
            return self._read(cfg)
        if cfg == self._config:
            return True
        self._config = cfg
        self._plan = build_plan(cfg)
        stage = carry_stage(self._stage, self._plan.stage_ids)
        if self._batch_index >= cfg.batch:
            self._batch_index = 0
            self.batch_index_changed.emit(0)
        self._rows_from = 0
        self._every_row = False  # a new config is judged by its own likely time
        moved = stage != self._stage
        self._stage = stage
        if self._head >= cfg.H:
            self._head = 0
            self.head_changed.emit(0)
        self.config_changed.emit(cfg)
        if moved:
            self.stage_changed.emit(stage)
        self.request_compute()
        return True

    # compute -------------------------------------------------------------------
    @property
    def trace(self) -> Trace | None:
        """The last trace computed, which may belong to an earlier config."""
        return self._trace

    @property
    def current_trace(self) -> Trace | None:
        """The trace when it belongs to the config on screen, else None (an edit is
        waiting for its run)."""
        return current_trace(self._trace, self._config)

    @property
    def computing(self) -> bool:
        return self._computing

    @property
    def computing_every_row(self) -> bool:
        """Whether the run in flight is one asked to compute every row (compute_every_row)."""
        return self._computing and self._every_row

    def request_compute(self, immediate: bool = False) -> None:
        """Compute the current config: at once when the worker is idle and no edit
        came in the last DEBOUNCE_MS, else once the edits pause (a trailing debounce),
        so a single edit is fast and a dragged slider does not queue a run per step."""
        self.jobs.cancel(JobKind.trace)  # a run in flight stops between its pieces
        if not self._started:
            return
        quiet = not self._debounce.isActive() and not self._computing
        if immediate or quiet:
            self._pending = False
            self._send_request()
        else:
            self._pending = True
        self._debounce.start()

    def _on_debounce(self) -> None:
        if self._pending:
            self._pending = False
            self._send_request()

    def _send_request(self) -> None:
        self._computing = True
        self.compute_started.emit()
        request = ComputeRequest(self._config, show_batch=self._batch_index, show_rows_from=self._rows_from,
                                 budget_bytes=self._request_budget(),
                                 rows_after_s=None if self._every_row else self._rows_after_s)
        self.jobs.submit(JobKind.trace, self._compute, request, cancellable=True)

    def _compute(self, request: ComputeRequest, *, cancel, progress) -> Trace:
        return self._run(request, cancel, progress)  # on the jobs' thread

    def _on_done(self, done: JobDone) -> None:
        if self._reading_answer(done):
            return
        if done.kind == JobKind.warm_up:
            self.engine_loaded.emit(done.result)
        elif done.kind == JobKind.trace:  # only the newest request's answer gets here
            self._computing = False
            self._trace = done.result
            self.trace_ready.emit(done.result)
            self._after_first_answer()

    def show_trace(self, trace: Trace) -> None:
        """Show a trace computed elsewhere (the CLI's export runs the engine itself, on
        the main thread, and never starts this controller). It replaces whatever a run
        in flight would have delivered. Raises ValueError for another config's trace."""
        if current_trace(trace, self._config) is None:
            raise ValueError("the trace belongs to another configuration")
        self.jobs.cancel(JobKind.trace)  # a late result must not replace it
        self._debounce.stop()
        self._pending = False
        self._computing = False
        self._trace = trace
        self.trace_ready.emit(trace)

    def _on_failed(self, failed: JobFailed) -> None:
        if self._reading_answer(failed):
            return
        if failed.kind == JobKind.warm_up:  # a broken torch install must not kill the window
            self.trace_failed.emit(f"could not load torch: {failed.message}")
        elif failed.kind == JobKind.trace:
            self._computing = False
            self.trace_failed.emit(failed.message)
            self._after_first_answer()

    def _on_cancelled(self, job: Job) -> None:
        if self._reading_answer(job):
            return
        if job.kind == JobKind.trace:
            self._after_first_answer()
        if job.kind == JobKind.trace and job.id == self.jobs.latest(JobKind.trace):
            self._computing = False

    def _on_progress(self, progress: JobProgress) -> None:
        self._reading_progress(progress)
        if progress.kind == JobKind.trace:
            self.compute_progressed.emit(progress.fraction)
            if progress.text:  # which rows a long sequence's run computes, said as it starts
                self.status_changed.emit(progress.text)

    def compute_every_row(self) -> None:
        """Compute every query row of the config on screen (a stage after the softmax needs
        them), however long it likely takes; the status bar shows its progress and Cancel."""
        self._every_row = True
        self.request_compute(immediate=True)

    def cancel(self) -> None:
        """Stop the run in flight; the last trace stays on screen."""
        self._every_row = False  # what is on screen stays what later runs compute
        self._debounce.stop()
        self._pending = False
        self.jobs.cancel(JobKind.trace)
        self._computing = False
        self.compute_cancelled.emit()
        self.status_changed.emit("computation cancelled")

    # shown batch element and rows -------------------------------------------
    @property
    def batch_index(self) -> int:
        return self._batch_index

    def set_batch_index(self, b: int) -> None:
        b = max(0, min(int(b), self._config.batch - 1))
        if b == self._batch_index:
            return
        self._batch_index = b
        self.batch_index_changed.emit(b)
        if self._trace is not None and self._trace.batch_index is not None:
            self.request_compute(immediate=True)  # windowed traces keep one element

    @property
    def head(self) -> int:
        """The query head the one-head pictures show (the diagram, the head selector)."""
        return self._head

    def set_head(self, head: int) -> None:
        head = max(0, min(int(head), self._config.H - 1))
        if head != self._head:
            self._head = head
            self.head_changed.emit(head)

    def set_rows_from(self, row: int) -> None:
        self._rows_from = max(0, int(row))
        if self._trace is not None and self._trace.mode == "windowed":
            self.request_compute(immediate=True)

    # stages --------------------------------------------------------------------
    @property
    def stage_ids(self) -> tuple[str, ...]:
        return self._plan.stage_ids

    @property
    def stage(self) -> str:
        return self._stage

    @property
    def stage_index(self) -> int:
        return self._plan.stage_ids.index(self._stage)

    def set_stage(self, stage: str | int) -> None:
        """Go to a stage by id or by its index in this config's list (clamped).
        An id this config does not have goes to its counterpart (carry_stage)."""
        ids = self._plan.stage_ids
        if isinstance(stage, str):
            if stage not in STAGE_LABELS:
                raise ValueError(f"no stage {stage!r}; this config has {', '.join(ids)}")
            target = carry_stage(stage, ids)
        else:
            target = ids[max(0, min(int(stage), len(ids) - 1))]
        if target != self._stage:
            self._stage = target
            self.stage_changed.emit(target)

    def next_stage(self) -> None:
        self.set_stage(self.stage_index + 1)

    def previous_stage(self) -> None:
        self.set_stage(max(0, self.stage_index - 1))

    def first_stage(self) -> None:
        self.set_stage(0)

    def last_stage(self) -> None:
        self.set_stage(len(self._plan.stage_ids) - 1)


__all__ = ["BASE_STEP_MS", "Controller", "MemoryBudgetError", "SPEEDS"]
