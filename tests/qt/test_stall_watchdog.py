"""The stall watchdog reports a stop of the event loop longer than its limit, with the function
the GUI thread was in, and nothing while the loop turns; MHA_EXPLORER_STALL_MS switches it on."""

from __future__ import annotations

import time

from PySide6.QtCore import QTimer

from mha_explorer.qt.stall_watchdog import StallWatchdog, limit_from_env

LIMIT_MS = 50.0


def holding_the_loop_for(seconds: float) -> None:
    """A slot that keeps the GUI thread from its event loop (what the watchdog is for)."""
    time.sleep(seconds)


def test_a_stop_over_the_limit_names_the_function_that_held_the_loop(qtbot):
    dog = StallWatchdog(LIMIT_MS, quiet=True)
    reported = []
    dog.stalled.connect(reported.append)

    def ours(stall) -> bool:  # a busy machine may stop the loop for other reasons too
        return any(line.endswith(" holding_the_loop_for") for line in stall.stack)

    dog.start()
    try:
        QTimer.singleShot(0, lambda: holding_the_loop_for(10 * LIMIT_MS / 1000))
        qtbot.waitUntil(lambda: any(ours(s) for s in reported), timeout=10_000)
    finally:
        dog.stop()
    stall = next(s for s in reported if ours(s))
    assert stall.ms >= 9 * LIMIT_MS and stall in dog.stalls
    assert "holding_the_loop_for" in stall.describe() and f"{stall.ms:.0f} ms" in stall.describe()


def test_a_turning_loop_reports_nothing(qtbot):
    dog = StallWatchdog(60_000.0, quiet=True)  # no machine is that busy: only the report is checked
    dog.start()
    beats = []
    timer = QTimer(interval=10)
    timer.timeout.connect(lambda: beats.append(1))
    timer.start()
    try:
        qtbot.waitUntil(lambda: len(beats) >= 20, timeout=10_000)
    finally:
        timer.stop()
        dog.stop()
    assert dog.stalls == [] and dog.longest_ms > 0  # it measured every gap, and none was a stall


def test_the_environment_switches_it_on(capsys):
    assert limit_from_env({}) is None
    assert limit_from_env({"MHA_EXPLORER_STALL_MS": "100"}) == 100.0
    assert limit_from_env({"MHA_EXPLORER_STALL_MS": "soon"}) is None
    assert "MHA_EXPLORER_STALL_MS='soon' is not a positive number" in capsys.readouterr().err
