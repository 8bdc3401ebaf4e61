"""What the window keeps for its whole life is taken out of Python's cycle collector once a
trace of new weights is drawn, so that a full collection (which walked some 230,000 objects
for 110 ms with the interpreter lock held) no longer stops the event loop at random."""

from __future__ import annotations

import gc
from types import SimpleNamespace

from PySide6.QtCore import QObject, Signal

from mha_explorer.qt.shell.long_lived import LongLivedFreezer


class _Traces(QObject):
    trace_ready = Signal(object)


def _trace(weights: str) -> SimpleNamespace:
    return SimpleNamespace(config=SimpleNamespace(weights=weights))


def test_the_objects_alive_at_new_weights_first_trace_leave_the_collectors_walks(qapp):
    traces = _Traces()
    freezer = LongLivedFreezer(traces)  # noqa: F841 - kept: it listens while the test runs
    before = gc.get_freeze_count()
    kept = [[i] for i in range(1000)]  # long-lived containers the collector would walk
    traces.trace_ready.emit(_trace("random"))
    assert gc.get_freeze_count() >= before + len(kept)
    assert not any(any(obj is k for k in kept[:1]) for obj in gc.get_objects())  # out of every generation
    frozen = gc.get_freeze_count()
    more = [[i] for i in range(1000)]
    traces.trace_ready.emit(_trace("random"))  # the same weights again: nothing new to keep
    assert gc.get_freeze_count() == frozen
    traces.trace_ready.emit(_trace("gemma3-270m"))  # a model's first trace: its objects too
    assert gc.get_freeze_count() >= frozen + len(more)
