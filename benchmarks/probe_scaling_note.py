"""The GUI thread's longest stall around the √d_k note on the largest config probe_stalls.py
uses (D=1024, H=16, B=4, T=4096): switching to scores, then softmax, once the trace is on
screen; and from the start with scores shown, the trace's run included. Prints how long
until the note said its numbers, and on which thread they were worked out (prints, asserts
nothing).

Run: QT_QPA_PLATFORM=offscreen python benchmarks/probe_scaling_note.py
"""

from __future__ import annotations

import os
import threading
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEventLoop, QTimer  # noqa: E402

import mha_explorer.core.display.scaling as scaling  # noqa: E402
from mha_explorer.core.config import MHAConfig  # noqa: E402
from mha_explorer.qt.shell.app import application, build_window  # noqa: E402

LARGEST = MHAConfig(d_model=1024, n_heads=16, batch=4, seq=4096)
SETTLE_S = 6.0  # after the trace: its maps drawn, the numbers (1-4 s on two busy cores) ready
computed: list[tuple[str, float]] = []  # (where, seconds) of each computation of the numbers
_numbers = scaling._scaling_numbers


def _timed(*args):
    start = time.perf_counter()
    numbers = _numbers(*args)
    gui = threading.current_thread() is threading.main_thread()
    computed.append(("on the GUI thread" if gui else "off it", time.perf_counter() - start))
    return numbers


def _run_until(app, done, seconds: float) -> float:
    """Turn the event loop until ``done()`` (or ``seconds``); the seconds it took."""
    start = time.perf_counter()
    while not done() and time.perf_counter() - start < seconds:
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 5)
    return time.perf_counter() - start


def probe(app, first_stage: str, switch_to: tuple[str, ...]) -> None:
    window = build_window(LARGEST)
    window.resize(1920, 1080)
    window.show()
    ctrl, view = window.controller, window.stage_view
    ctrl.set_stage(first_stage)
    gaps: list[tuple[float, float]] = []  # (when, gap since the previous tick) s
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        gaps.append((now, now - last[0]))
        last[0] = now

    timer = QTimer(interval=5)
    timer.timeout.connect(tick)
    timer.start()
    said = lambda: (view.scaling.toolTip() or view.scaling.text()).startswith("Why")  # noqa: E731
    start = time.perf_counter()
    ctrl.start()
    for stage in switch_to or (first_stage,):
        if switch_to:  # the trace on screen, the views and the jobs' thread settled
            _run_until(app, lambda: ctrl.current_trace is not None, 600)
            _run_until(app, lambda: False, SETTLE_S)
            computed.clear()
            start = time.perf_counter()
            ctrl.set_stage(stage)
        _run_until(app, said, 600)
        took = time.perf_counter() - start
        _run_until(app, lambda: False, 1.5)
        worst = max(g for when, g in gaps if when >= start)
        where = ", ".join(f"{s:.2f} s {name}" for name, s in computed) or "remembered"
        what = f"switch to {stage}" if switch_to else f"start on {stage} (the run included)"
        print(f"{what}: note after {took * 1000:.0f} ms, longest GUI stall {worst * 1000:.0f} ms; "
              f"numbers: {where} (load {os.getloadavg()[0]:.2f})")
    timer.stop()
    ctrl.shutdown()
    window.close()


def main() -> None:
    app = application()
    scaling._scaling_numbers = _timed
    probe(app, "input", ("scores", "softmax"))
    computed.clear()
    probe(app, "scores", ())


if __name__ == "__main__":
    main()
