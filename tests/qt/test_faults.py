"""Any exception in the compute worker becomes a message, and the app stays usable.

The controller is given a run function (its public seam for the engine call)
that computes with the real engine unless told to fail; after a failure the
next edit must compute normally on the same, still running, worker thread.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from waits import TRACE_MS, UI_MS

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.memory import MemoryBudgetError
from mha_explorer.qt.compute import run_engine
from mha_explorer.qt.shell.main_window import MainWindow


class FlakyEngine:
    """The engine, with faults on demand: ``fail_once(exc)`` raises ``exc`` on the next
    run only; ``fail_always(make)`` raises ``make(config)`` on every run until ``heal()``."""

    def __init__(self) -> None:
        self.configs: list[MHAConfig] = []
        self._once: BaseException | None = None
        self._always: Callable[[MHAConfig], BaseException] | None = None

    def fail_once(self, exc: BaseException) -> list[MHAConfig]:
        self.configs, self._once = [], exc
        return self.configs

    def fail_always(self, make: Callable[[MHAConfig], BaseException]) -> None:
        self._always = make

    def heal(self) -> None:
        self._once = self._always = None

    def __call__(self, request, cancel, progress):
        self.configs.append(request.config)
        if self._always is not None:
            raise self._always(request.config)
        if self._once is not None:
            exc, self._once = self._once, None
            raise exc
        return run_engine(request, cancel, progress)


@pytest.fixture
def flaky_controller(make_controller):
    engine = FlakyEngine()
    ctrl = make_controller(run=engine)
    return ctrl, engine


def fail_then_recover(qtbot, ctrl, engine: FlakyEngine, exc: BaseException) -> str:
    calls = engine.fail_once(exc)
    with qtbot.waitSignal(ctrl.trace_failed, timeout=TRACE_MS) as failed:
        assert ctrl.update(seq=7)
    message = failed.args[0]
    assert calls and calls[0].seq == 7
    assert not ctrl.computing
    assert ctrl.is_running(), "the worker thread died with the exception"

    with qtbot.waitSignal(ctrl.trace_ready, timeout=TRACE_MS) as ready:
        assert ctrl.update(seq=5)
    trace = ready.args[0]
    assert trace.config.seq == 5 and ctrl.trace is trace
    return message


@pytest.mark.parametrize("exc,shown", [
    (RuntimeError("boom"), "RuntimeError: boom"),
    (ValueError("boom"), "ValueError: boom"),
    (MemoryError("boom"), "MemoryError: boom"),
    (KeyError("boom"), "boom"),
    (ZeroDivisionError("boom"), "ZeroDivisionError: boom"),
    (torch.cuda.OutOfMemoryError("boom: CPU ran out"), "OutOfMemoryError: boom"),
])
def test_a_worker_exception_is_a_message_and_the_next_edit_computes(qtbot, flaky_controller,
                                                                     exc, shown):
    ctrl, engine = flaky_controller
    message = fail_then_recover(qtbot, ctrl, engine, exc)
    assert shown in message


def test_a_config_error_from_the_engine_is_shown_as_its_message(qtbot, flaky_controller):
    ctrl, engine = flaky_controller
    message = fail_then_recover(qtbot, ctrl, engine, MemoryBudgetError(10 << 30, 1 << 30, "the CPU"))
    assert message.startswith("needs about 10.0 GiB on the CPU but the budget is 1.0 GiB")


def test_the_last_good_trace_stays_after_a_failure(qtbot, flaky_controller):
    ctrl, engine = flaky_controller
    before = ctrl.trace
    engine.fail_once(RuntimeError("boom"))
    with qtbot.waitSignal(ctrl.trace_failed, timeout=TRACE_MS):
        ctrl.update(seq=7)
    assert ctrl.trace is before  # still on screen, not replaced by None
    assert ctrl.config.seq == 7  # the edit itself was accepted


def test_repeated_failures_never_stop_the_worker(qtbot, flaky_controller):
    ctrl, engine = flaky_controller
    engine.fail_always(lambda cfg: RuntimeError(f"boom {cfg.seq}"))
    for seq in (3, 4, 5):
        with qtbot.waitSignal(ctrl.trace_failed, timeout=TRACE_MS) as failed:
            ctrl.update(seq=seq)
        assert failed.args[0] == f"RuntimeError: boom {seq}"
    engine.heal()
    with qtbot.waitSignal(ctrl.trace_ready, timeout=TRACE_MS):
        ctrl.update(seq=6)
    assert ctrl.is_running()


# --- through the main window ---------------------------------------------------------

def test_the_status_bar_shows_the_failure_and_clears_it_on_recovery(qtbot, flaky_controller):
    ctrl, engine = flaky_controller
    window = MainWindow(ctrl)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window, timeout=UI_MS)

    calls = engine.fail_once(RuntimeError("boom"))
    with qtbot.waitSignal(ctrl.trace_failed, timeout=TRACE_MS):
        ctrl.update(seq=7)
    assert calls
    status = window.status_view
    assert "boom" in status.message
    assert status.message_label.toolTip() == status.message  # the whole text, however narrow
    assert status.message_label.text()  # something is on screen

    with qtbot.waitSignal(ctrl.trace_ready, timeout=TRACE_MS):
        ctrl.update(seq=5)
    assert "boom" not in status.message
    assert window.isVisible() and ctrl.is_running()
