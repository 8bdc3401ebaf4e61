"""Any exception in the compute worker becomes a message, and the app stays usable.

The engine is made to fail once by replacing ``mha_explorer.core.engine.run``
(the worker looks it up on every request); the next edit must compute normally
on the same, still running, worker thread.
"""

from __future__ import annotations

import pytest
import torch

from mha_explorer.core import engine
from mha_explorer.core.config import MHAConfig
from mha_explorer.core.memory import MemoryBudgetError

TRACE_TIMEOUT_MS = 60_000  # as tests/qt/conftest.py: torch's first import on a slow machine


def fail_once(monkeypatch, exc: BaseException) -> list[MHAConfig]:
    """engine.run raises ``exc`` on its next call, then works again; returns the
    configs it was called with."""
    real_run = engine.run
    calls: list[MHAConfig] = []

    def run(cfg, **kwargs):
        calls.append(cfg)
        if len(calls) == 1:
            raise exc
        return real_run(cfg, **kwargs)

    monkeypatch.setattr(engine, "run", run)
    return calls


def fail_then_recover(qtbot, ctrl, monkeypatch, exc: BaseException) -> str:
    calls = fail_once(monkeypatch, exc)
    with qtbot.waitSignal(ctrl.trace_failed, timeout=TRACE_TIMEOUT_MS) as failed:
        assert ctrl.update(seq=7)
    message = failed.args[0]
    assert calls and calls[0].seq == 7
    assert not ctrl.computing
    assert ctrl._thread.isRunning(), "the worker thread died with the exception"

    with qtbot.waitSignal(ctrl.trace_ready, timeout=TRACE_TIMEOUT_MS) as ready:
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
def test_a_worker_exception_is_a_message_and_the_next_edit_computes(qtbot, make_controller,
                                                                     monkeypatch, exc, shown):
    ctrl = make_controller()
    message = fail_then_recover(qtbot, ctrl, monkeypatch, exc)
    assert shown in message


def test_a_config_error_from_the_engine_is_shown_as_its_message(qtbot, make_controller, monkeypatch):
    ctrl = make_controller()
    message = fail_then_recover(qtbot, ctrl, monkeypatch, MemoryBudgetError(10 << 30, 1 << 30, "the CPU"))
    assert message.startswith("needs about 10.0 GiB on the CPU but the budget is 1.0 GiB")


def test_the_last_good_trace_stays_after_a_failure(qtbot, make_controller, monkeypatch):
    ctrl = make_controller()
    before = ctrl.trace
    fail_once(monkeypatch, RuntimeError("boom"))
    with qtbot.waitSignal(ctrl.trace_failed, timeout=TRACE_TIMEOUT_MS):
        ctrl.update(seq=7)
    assert ctrl.trace is before  # still on screen, not replaced by None
    assert ctrl.config.seq == 7  # the edit itself was accepted


def test_repeated_failures_never_stop_the_worker(qtbot, make_controller, monkeypatch):
    ctrl = make_controller()

    def always(cfg, **kwargs):
        raise RuntimeError(f"boom {cfg.seq}")

    monkeypatch.setattr(engine, "run", always)
    for seq in (3, 4, 5):
        with qtbot.waitSignal(ctrl.trace_failed, timeout=TRACE_TIMEOUT_MS) as failed:
            ctrl.update(seq=seq)
        assert failed.args[0] == f"RuntimeError: boom {seq}"
    monkeypatch.undo()
    with qtbot.waitSignal(ctrl.trace_ready, timeout=TRACE_TIMEOUT_MS):
        ctrl.update(seq=6)
    assert ctrl._thread.isRunning()


# --- through the main window ---------------------------------------------------------

def main_window_class():
    try:
        from mha_explorer.qt.shell.main_window import MainWindow
    except Exception as exc:  # noqa: BLE001 - its panels are written alongside this test
        pytest.skip(f"mha_explorer.qt.shell.main_window does not import yet: {exc}")
    return MainWindow


def test_the_status_bar_shows_the_failure_and_clears_it_on_recovery(qtbot, make_controller,
                                                                     monkeypatch):
    MainWindow = main_window_class()
    ctrl = make_controller()
    window = MainWindow(ctrl)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)

    calls = fail_once(monkeypatch, RuntimeError("boom"))
    with qtbot.waitSignal(ctrl.trace_failed, timeout=TRACE_TIMEOUT_MS):
        ctrl.update(seq=7)
    assert calls
    status = window.status_view
    assert "boom" in status.message
    assert status.message_label.toolTip() == status.message  # the whole text, however narrow
    assert status.message_label.text()  # something is on screen

    with qtbot.waitSignal(ctrl.trace_ready, timeout=TRACE_TIMEOUT_MS):
        ctrl.update(seq=5)
    assert "boom" not in status.message
    assert window.isVisible() and ctrl._thread.isRunning()
