"""The √d_k note at scores and softmax: its numbers are worked out on the jobs' thread, never
on the GUI thread (for a long sequence that froze the window for most of a second the first
time the stage was shown), and the header then says the same sentence as before."""

from __future__ import annotations

import threading

import pytest

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.display import scaling
from mha_explorer.core.display.scaling import score_width
from mha_explorer.qt.jobs import JobKind

NUMBERS = scaling._scaling_numbers  # the computation itself, before any test wraps it
CONFIG = MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu")


@pytest.fixture
def computing_threads(monkeypatch):
    """The thread of every computation of the scaling numbers (a remembered answer is none)."""
    threads: list[threading.Thread] = []

    def recording(*args, **kwargs):
        threads.append(threading.current_thread())
        return NUMBERS(*args, **kwargs)

    monkeypatch.setattr(scaling, "_scaling_numbers", recording)
    return threads


def _sentence(trace, batch_index: int) -> str:
    """What the header said before: the numbers of the shown batch element's scores."""
    scores = trace.tensors["scores"]["scores"][trace.batch_slot(batch_index)]  # [H, rows, S]
    return NUMBERS(scores, score_width(trace.config)).sentence()


def _said(view) -> str:
    """The note in full (a short window cuts it at whole lines, the whole on hover)."""
    return view.scaling.toolTip() or view.scaling.text()


def test_switching_to_scores_computes_the_note_off_the_gui_thread(qtbot, make_window,
                                                                  computing_threads):
    window = make_window(CONFIG)
    ctrl, view = window.controller, window.stage_view
    ctrl.set_batch_index(1)  # every element is kept: the note follows without a new run
    ctrl.set_stage("scores")
    qtbot.waitUntil(lambda: _said(view).startswith("Why"))
    assert _said(view) == _sentence(ctrl.trace, 1)
    assert view.scaling.isVisible()
    assert computing_threads and threading.main_thread() not in computing_threads


def test_the_note_follows_the_shown_batch_element_off_the_gui_thread(qtbot, make_window,
                                                                    computing_threads):
    window = make_window(CONFIG)
    ctrl, view = window.controller, window.stage_view
    ctrl.set_stage("softmax")
    first = _sentence(ctrl.trace, 0)
    qtbot.waitUntil(lambda: _said(view) == first)
    ctrl.set_batch_index(1)
    second = _sentence(ctrl.trace, 1)
    assert second != first  # another sequence, other numbers
    qtbot.waitUntil(lambda: _said(view) == second)
    ctrl.set_batch_index(0)  # remembered: at once, and nothing computed again
    computed = len(computing_threads)
    assert _said(view) == first
    assert len(computing_threads) == computed
    assert threading.main_thread() not in computing_threads


def test_a_large_trace_shown_elsewhere_waits_until_scores_are_shown(qtbot, make_window,
                                                                    computing_threads):
    """A second of the jobs' thread that cannot stop must not delay the next edit's run
    while the class looks at another stage; shown, the note follows."""
    big = MHAConfig(d_model=64, n_heads=4, batch=1, seq=1024, device="cpu")  # 4 Mi scores
    window = make_window(big)
    ctrl, view = window.controller, window.stage_view
    assert ctrl.stage == "input"
    qtbot.waitUntil(lambda: ctrl.later.idle)  # the views have taken the trace in: asked by now
    assert ctrl.jobs.latest(JobKind.notes) == 0 and not computing_threads
    ctrl.set_stage("scores")
    qtbot.waitUntil(lambda: _said(view) == _sentence(ctrl.trace, 0), timeout=60_000)
    assert computing_threads and threading.main_thread() not in computing_threads
