"""Where the GUI thread's longest stalls go after an edit to the largest config, and
while a large trace is drawn (prints, asserts nothing).

A 5 ms QTimer records each gap between its ticks and the GUI thread's CPU time in
it; a helper thread samples the GUI thread's Python stack every 1.5 ms. For the
longest gaps it prints the innermost project frames seen most often in them, so a
stall reads as "which view's reaction".

Run: QT_QPA_PLATFORM=offscreen python benchmarks/probe_stalls.py [--top 4] [--repeat 2] [--stage softmax]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import threading
import time
import traceback

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

PROJECT = os.sep + "mha_explorer" + os.sep


class Sampler(threading.Thread):
    """Samples ``thread_id``'s stack every ``period`` s: (time, project frames, innermost first)."""

    def __init__(self, thread_id: int, period: float = 0.0015) -> None:
        super().__init__(daemon=True, name="stall-sampler")
        self.thread_id, self.period = thread_id, period
        self.samples: list[tuple[float, tuple[str, ...]]] = []
        self.running = True

    def run(self) -> None:
        while self.running:
            frame = sys._current_frames().get(self.thread_id)
            if frame is not None:
                stack = traceback.extract_stack(frame)
                mine = tuple(f"{f.filename.split(PROJECT)[-1]}:{f.lineno} {f.name}"
                             for f in reversed(stack) if PROJECT in f.filename)
                self.samples.append((time.perf_counter(), mine))
            time.sleep(self.period)


def report(name: str, ticks, sampler: Sampler, top: int) -> None:
    """The ``top`` longest gaps, with the project stacks seen most often in each."""
    worst = sorted(ticks, key=lambda t: t[1] - t[0], reverse=True)[:top]
    print(f"{name}: {len(ticks)} ticks; longest gaps (ms, cpu ms on the GUI thread):")
    for start, end, cpu in worst:
        seen = collections.Counter()
        for when, stack in sampler.samples:
            if start <= when <= end and stack:
                # the outermost view method under the event loop, and the innermost frame
                seen[(stack[-1], stack[0])] += 1
        print(f"  {(end - start) * 1000:6.1f} ms (cpu {cpu * 1000:5.1f})")
        for (outer, inner), n in seen.most_common(6):
            print(f"      {n:3d} samples  {outer}  …  {inner}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--top", type=int, default=4)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--stage", default=None, help="the stage shown (default: the first)")
    args = p.parse_args()

    from PySide6.QtCore import QEventLoop, QTimer

    from mha_explorer.core.config import MHAConfig
    from mha_explorer.qt.shell.app import application, build_window

    app = application()
    window = build_window(MHAConfig())
    window.resize(1920, 1080)
    window.show()
    app.processEvents()
    ctrl = window.controller
    first = QEventLoop()
    ctrl.trace_ready.connect(first.quit)
    ctrl.start()
    first.exec()
    if args.stage:
        ctrl.set_stage(args.stage)
    app.processEvents()

    sys.setswitchinterval(0.0005)  # the sampler gets the interpreter often enough to see
    sampler = Sampler(threading.get_ident())
    sampler.start()
    ticks: list[tuple[float, float, float]] = []  # (previous tick, this tick, GUI cpu between) s
    last = [time.perf_counter(), time.thread_time()]

    def on_tick() -> None:
        now, cpu = time.perf_counter(), time.thread_time()
        ticks.append((last[0], now, cpu - last[1]))
        last[:] = [now, cpu]

    timer = QTimer(interval=5)
    timer.timeout.connect(on_tick)
    timer.start()
    big = MHAConfig(d_model=1024, n_heads=16, batch=4, seq=4096)
    small = MHAConfig()
    for r in range(args.repeat):
        for cfg, name in ((big, "D=1024 H=16 B=4 T=4096"), (small, "the default config")):
            loop = QEventLoop()
            ctrl.trace_ready.connect(loop.quit)
            ctrl.trace_failed.connect(loop.quit)
            ticks.clear()
            last[:] = [time.perf_counter(), time.thread_time()]
            t0 = time.perf_counter()
            ctrl.set_config(cfg)
            ctrl.request_compute(immediate=True)
            loop.exec()
            t_trace = time.perf_counter()
            # let the views finish what the trace started (staggered work included)
            settle = QEventLoop()
            QTimer.singleShot(1500, settle.quit)
            settle.exec()
            ctrl.trace_ready.disconnect(loop.quit)
            ctrl.trace_failed.disconnect(loop.quit)
            edit = [t for t in ticks if t[1] <= t0 + 1.0 and t[1] < t_trace]
            drawn = [t for t in ticks if t[1] >= t_trace - 0.001]
            maps = window.heatmaps.maps
            shapes = sorted({m.image.shape for m in maps.maps}) if maps is not None else []
            print(f"-- round {r + 1}, {name}, stage {ctrl.stage}: {len(maps.maps) if maps else 0} maps "
                  f"of {shapes} (load {os.getloadavg()[0]:.2f})")
            report("  after the edit (first second, worker computing)", edit, sampler, args.top)
            report("  drawing the trace (1.5 s after it came)", drawn, sampler, args.top)
    sampler.running = False
    timer.stop()
    ctrl.shutdown()
    window.close()


if __name__ == "__main__":
    main()
