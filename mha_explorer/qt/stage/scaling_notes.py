"""The √d_k note's numbers, worked out on the jobs' thread: once the views have drawn
each trace, for the batch element shown, and when another element of a trace that keeps
them all is shown. The stage header only reads what is remembered
(stage_notes.known_scaling_note): for 16 heads of 128 × 4,096 scores the numbers take
about a second on two busy cores, which froze the window when they were worked out on the
GUI thread as scores or softmax was first shown.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from mha_explorer.core.stages.catalog import StageId
from mha_explorer.qt.jobs import JobDone, JobFailed, JobKind
from mha_explorer.qt.stage.stage_notes import SCALING_STAGES, known_scaling_note, scaling_note

if TYPE_CHECKING:
    from mha_explorer.qt.controller import Controller

WAITING = "working out ÷√d_k…"  # the header's word until the numbers come
AHEAD_MAX_SCORES = 1 << 20  # scores up to this many are worked out at once (milliseconds)


class ScalingNotes(QObject):
    """``text(stage)``: the note for the controller's trace and batch element, or WAITING
    while the jobs' thread works it out; ``ready`` once it has (ask again)."""

    ready = Signal()

    def __init__(self, controller: Controller, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._controller = controller
        # (weak reference to the trace, batch element) being worked out, or that could not be
        # (it then says nothing); weak: a replaced trace's arrays are not kept for this
        self._asked: tuple[weakref.ref, int] | None = None
        self._failed: tuple[weakref.ref, int] | None = None
        controller.trace_ready.connect(self._on_trace)
        controller.batch_index_changed.connect(self._prepare)
        controller.compute_cancelled.connect(self._prepare)  # the old trace stays on screen
        controller.jobs.done.connect(self._on_end)
        controller.jobs.failed.connect(self._on_end)

    def text(self, stage: str) -> str:
        c = self._controller
        trace, b = c.current_trace, c.batch_index
        note = known_scaling_note(trace, stage, b)
        if note is not None:
            return note
        if not c.is_running():  # no jobs' thread (a picture being exported): here, as it is needed
            return scaling_note(trace, stage, b)
        if _names(self._failed, trace, b):
            return ""
        self._prepare()
        return WAITING

    def _on_trace(self, trace) -> None:
        """Ahead of time when the numbers are cheap or scores/softmax is on screen; a large
        trace shown elsewhere waits until they are: a second of the jobs' thread, which
        cannot stop midway, must not hold up the next edit's run for a stage never shown."""
        scores = trace.tensors.get(StageId.scores, {}).get("scores")
        if (self._controller.stage in SCALING_STAGES or scores is None
                or scores.size <= AHEAD_MAX_SCORES):
            self._prepare()

    def _prepare(self, *_args) -> None:
        """Ask once the views have taken in the trace or the edit: on two busy cores, numbers
        worked out while the maps are drawn take the CPU time the drawing needs."""
        self._controller.later.schedule_last(self._ask, self._ask)

    def _ask(self) -> None:
        """Ask the jobs' thread for the shown element's numbers, unless known or asked."""
        c = self._controller
        trace, b = c.current_trace, c.batch_index
        if trace is None or not c.is_running() or known_scaling_note(trace, StageId.scores, b) is not None:
            return
        if _names(self._asked, trace, b):
            return
        self._asked = (weakref.ref(trace), b)
        c.jobs.submit(JobKind.notes, scaling_note, trace, StageId.scores, b)

    def _on_end(self, end: JobDone | JobFailed) -> None:
        if end.kind != JobKind.notes:
            return
        if isinstance(end, JobFailed):
            self._failed = self._asked
        self._asked = None
        self.ready.emit()


def _names(key: tuple[weakref.ref, int] | None, trace, batch_index: int) -> bool:
    return key is not None and key[0]() is trace and key[1] == batch_index
