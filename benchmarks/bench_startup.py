"""Start-up and responsiveness figures for the main window (prints, asserts nothing).

1. process start -> window shown, against `python -c "import torch; from PySide6 import QtWidgets"`
   (goal: at most 0.4 of the baseline);
2. config edit -> shapes table updated (goal: at most 16 ms);
3. the longest event-loop stall while the worker computes the largest config within
   the memory budget (goal: at most 50 ms).

Run: QT_QPA_PLATFORM=offscreen python benchmarks/bench_startup.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SHOW_PROBE = r"""
import sys, time
from mha_explorer.qt.shell.app import application, build_window
from mha_explorer.core.config import MHAConfig
app = application()
w = build_window(MHAConfig())
w.show()
app.processEvents()
print(time.time())
print('torch' in sys.modules)
w.controller.shutdown()
"""
BASELINE = "import time; import torch; from PySide6 import QtWidgets; print(time.time())"


def _launch(code: str) -> tuple[float, list[str]]:
    t0 = time.time()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.split()
    return float(lines[0]) - t0, lines[1:]


def bench_start(repeat: int) -> None:
    _launch(BASELINE)  # warm the file cache for both
    _launch(SHOW_PROBE)
    base = statistics.median(_launch(BASELINE)[0] for _ in range(repeat))
    runs = [_launch(SHOW_PROBE) for _ in range(repeat)]
    shown = statistics.median(r[0] for r in runs)
    torch_loaded = any(r[1] == ["True"] for r in runs)
    print(f"start -> window shown: {shown * 1000:7.0f} ms (median of {repeat})")
    print(f"import torch + QtWidgets: {base * 1000:7.0f} ms")
    print(f"ratio: {shown / base:.2f} (goal <= 0.40); torch imported before show: {torch_loaded}")


def bench_in_process(repeat: int) -> None:
    from PySide6.QtCore import QElapsedTimer, QEventLoop, Qt, QTimer

    from mha_explorer.core.config import MHAConfig
    from mha_explorer.core.plan.memory import default_budget, estimate
    from mha_explorer.qt.shell.app import application, build_window

    app = application()
    window = build_window(MHAConfig())
    window.resize(1920, 1080)
    window.show()
    app.processEvents()
    ctrl, table = window.controller, window.shapes
    first = QEventLoop()
    ctrl.trace_ready.connect(first.quit)
    ctrl.start()
    first.exec()

    # 2. edit -> table: time from the edit to the table's repaint having run
    times = []
    for i in range(repeat * 4):
        t0 = time.perf_counter()
        ctrl.update(d_model=512 + 64 * ((i % 4) + 1), n_heads=8)
        table.viewport().repaint()
        times.append((time.perf_counter() - t0) * 1000)
    print(f"config edit -> shapes table updated: median {statistics.median(times):.2f} ms, "
          f"max {max(times):.2f} ms (goal <= 16 ms)")

    # 3. stalls while the worker computes the largest config that fits the budget
    budget = default_budget()
    cfg = MHAConfig(d_model=1024, n_heads=16, batch=4, seq=256)
    for seq in (512, 1024, 2048, 4096):
        bigger = cfg.replace(seq=seq)
        if estimate(bigger).full_bytes > budget:
            break
        cfg = bigger
    loop = QEventLoop()
    stalls: list[tuple[float, float]] = []  # (when the tick ran, gap since the last one) in s
    finished_at: list[float] = []
    clock = QElapsedTimer()
    tick = QTimer(interval=1)

    def on_tick() -> None:
        stalls.append((time.perf_counter(), clock.restart() / 1000))

    tick.timeout.connect(on_tick)
    # recorded on the worker thread the moment the engine returns, before any view renders
    ctrl.jobs._runner.finished.connect(lambda *_: finished_at.append(time.perf_counter()),
                                  Qt.ConnectionType.DirectConnection)
    ctrl.trace_ready.connect(loop.quit)
    ctrl.trace_failed.connect(loop.quit)
    clock.start()
    tick.start()
    t0 = time.perf_counter()
    ctrl.set_config(cfg)
    ctrl.request_compute(immediate=True)
    loop.exec()
    rendered = time.perf_counter()
    tick.stop()
    done = finished_at[-1] if finished_at else rendered
    during = [gap for when, gap in stalls if when <= done]
    print(f"largest config computed: D={cfg.d_model} H={cfg.H} B={cfg.batch} T={cfg.T} in "
          f"{done - t0:.2f} s; longest event-loop stall while the worker computed "
          f"{max(during) * 1000:.0f} ms over {len(during)} ticks (goal <= 50 ms); "
          f"then the views rendered the new trace in {(rendered - done) * 1000:.0f} ms")
    window.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    bench_start(args.repeat)
    bench_in_process(args.repeat)


if __name__ == "__main__":
    main()
