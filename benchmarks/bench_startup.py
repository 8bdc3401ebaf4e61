"""Start-up as a person sees it (prints figures, asserts nothing).

On an X server of its own (Xvfb), each round launches in turn:

- the baseline, ``python -c "import torch; from PySide6 import QtWidgets"`` (until it prints);
- the installed ``mha-explorer`` command, ``python -m mha_explorer``, and a bare PySide6
  main window, each until its window is mapped (what ``xdotool search --onlyvisible`` or a
  window manager sees) and first drawn into (the X DAMAGE extension's first report).

Each window is closed with Ctrl+C (SIGINT) and everything it started is waited for before the
next launch, so every launch meets the same machine. Goal: ``mha-explorer``'s window at most
0.40 of the baseline (the median of the rounds' ratios).

Then first launches through the command's own entry point, with marks along the way (Python
started, command line parsed, QApplication made, window built, shown), with the early engine
(torch loading in a process of its own from launch) and without it, alternately: the window
mapped, and the first heatmaps drawn after it (goal: at most 2 s).

Then, in this process and offscreen: config edit -> shapes table (goal 16 ms) and the longest
event-loop stall while the worker computes the largest config within the budget (goal 50 ms).

Every launch starts with fresh settings (a first launch) and runs under ``taskset`` on the
CPUs given (default: all this process may use).

Run: python benchmarks/bench_startup.py [--repeat 6] [--cpus 0,1] [--launches-only]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from x_screen import WindowWatcher, x_server  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
LAUNCH_TIMEOUT_S = 90
BASELINE = "import time; import torch; from PySide6 import QtWidgets; print(time.time())"
BARE_WINDOW = ("from PySide6.QtWidgets import QApplication, QMainWindow\n"
               "app = QApplication([])\nw = QMainWindow()\nw.resize(1280, 720)\nw.show()\napp.exec()")

# The command's entry point (what the console script runs: launcher.main) with marks written to
# MARKS_FILE as the modules it names are imported and its steps return. A finder at the front of
# sys.meta_path wraps a module's loading, so nothing is imported earlier than the command does.
MARKED_LAUNCH = r"""
import os, sys, time
MARKS = open(os.environ["MARKS_FILE"], "a", buffering=1)
def mark(name):
    MARKS.write(f"{name} {time.time()}\n")
mark("python started")

def on_early(module):
    if os.environ.get("EARLY") == "0":
        module.EarlyEngine.start = classmethod(lambda cls: None)
    start = module.EarlyEngine.start.__func__
    def started(cls):
        engine = start(cls)
        mark("early engine started" if engine else "no early engine")
        return engine
    module.EarlyEngine.start = classmethod(started)

def on_app(module):
    mark("Qt and the window's modules imported")
    application, build_window = module.application, module.build_window
    def app(*args, **kwargs):
        made = application(*args, **kwargs)
        mark("QApplication made")
        return made
    def build(*args, **kwargs):
        window = build_window(*args, **kwargs)
        mark("window built")
        show = window.show
        def shown():
            show()
            mark("show() returned")
        window.show = shown
        c = window.controller
        c.engine_loaded.connect(lambda _s: mark("the window's torch loaded"))
        def drawn():
            from PySide6.QtWidgets import QApplication
            QApplication.processEvents()  # the paints the new images asked for
            mark("heatmaps drawn")
        def on_trace(_trace):  # connected after the window's own slot: the panel has its images
            mark("first trace")
            from PySide6.QtCore import QTimer
            QTimer.singleShot(0, drawn)
        c.trace_ready.connect(on_trace)
        return window
    module.application, module.build_window = app, build

def wrap(cls, method, name):  # a mark when ``method`` of ``cls`` first returns
    run = getattr(cls, method)
    def marked(self, *args, **kwargs):
        result = run(self, *args, **kwargs)
        if name not in MARKED:
            MARKED.add(name)
            mark(name)
        return result
    setattr(cls, method, marked)
MARKED = set()

HOOKS = {"mha_explorer.qt.early_engine": on_early, "mha_explorer.qt.shell.app": on_app,
         "mha_explorer.qt.shell.main_window": lambda m: wrap(m.MainWindow, "after_first_paint",
                                                             "window's first paintEvent"),
         "mha_explorer.qt.shell.compute_gate": lambda m: wrap(m.ComputeGate, "start",
                                                              "compute gate opened"),
         "mha_explorer.cli": lambda _m: mark("command line imported")}

class After:
    def find_spec(self, name, path, target=None):
        if name not in HOOKS:
            return None
        import importlib.util
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            HOOKS[name](module)
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, After())
from mha_explorer.launcher import main
sys.exit(main())
"""
MARK_ORDER = ("python started", "early engine started", "no early engine", "command line imported",
              "Qt and the window's modules imported", "QApplication made", "window built",
              "show() returned", "mapped", "compute gate opened", "window's first paintEvent",
              "painted", "first trace", "heatmaps drawn",
              "the window's torch loaded")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


@dataclass
class Launch:
    mapped: float  # s from launch to the window mapped
    painted: float  # s from launch to its first pixels
    cpu: float  # CPU seconds the process had used when its window was mapped
    marks: dict[str, float]  # s from launch, by name


class Launcher:
    """Launches on one X server, one at a time."""

    def __init__(self, display: str, cpus: str | None) -> None:
        self.watcher = WindowWatcher(display)
        self.prefix = ["taskset", "-c", cpus] if cpus else []
        env = {k: v for k, v in os.environ.items()
               # launched as an installed copy runs: with the project's bytecode cached and
               # on the real screen
               if k not in ("PYTHONDONTWRITEBYTECODE", "QT_QPA_PLATFORM")}
        env["DISPLAY"] = display
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        self.env = env

    def baseline(self) -> tuple[float, float]:
        """(seconds until it printed, its CPU seconds)."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.time()
        out = subprocess.run(self.prefix + [sys.executable, "-c", BASELINE], capture_output=True,
                             text=True, check=True, env=self.env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return float(out.stdout.split()[0]) - t0, cpu

    def window(self, argv: list[str], **env: str) -> Launch:
        """Launch ``argv`` with fresh settings, wait for its window, close it with Ctrl+C."""
        with tempfile.TemporaryDirectory(prefix="mha-startup-") as tmp:
            marks_file = Path(tmp) / "marks"
            marks_file.touch()
            run_env = dict(self.env, MHA_EXPLORER_SETTINGS=str(Path(tmp) / "settings.json"),
                           MARKS_FILE=str(marks_file), **env)
            log = open(Path(tmp) / "log", "w+")  # noqa: SIM115 - read back on a failure
            t0 = time.time()
            process = subprocess.Popen(self.prefix + argv, env=run_env, cwd=tmp, stdout=log, stderr=log)
            seen = self.watcher.wait_for(process.pid, LAUNCH_TIMEOUT_S)
            drawn = True
            if seen is not None and argv[-1] == MARKED_LAUNCH:  # its heatmaps too
                drawn = self._wait_for_mark(marks_file, "heatmaps drawn", process)
            ended = process.poll()  # None: it was still running when it was closed
            self._close(process)
            self.watcher.forget()
            log.seek(0)
            said = log.read()[-2000:]
            log.close()
            if seen is None:
                raise RuntimeError(f"no window from {argv[:3]} in {LAUNCH_TIMEOUT_S} s:\n{said}")
            if not drawn:
                print(f"  a launch drew no heatmaps (exit code {ended}); it said:\n{said}", flush=True)
            marks = {}
            for line in marks_file.read_text().splitlines():
                name, _, when = line.rpartition(" ")
                marks.setdefault(name, float(when) - t0)
            marks["mapped"], marks["painted"] = seen.mapped - t0, seen.painted - t0
            return Launch(seen.mapped - t0, seen.painted - t0, seen.cpu or float("nan"), marks)

    @staticmethod
    def _wait_for_mark(path: Path, name: str, process: subprocess.Popen) -> bool:
        end = time.time() + LAUNCH_TIMEOUT_S
        while time.time() < end and process.poll() is None:
            if name in path.read_text():
                return True
            time.sleep(0.05)
        return name in path.read_text()

    @staticmethod
    def _close(process: subprocess.Popen) -> None:
        """Ctrl+C, as a person at the terminal; then whatever it started is waited for (the
        early engine may be importing torch), so it does not load the next launch."""
        try:
            family = psutil.Process(process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            family = []
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for child in family:
            try:
                child.wait(timeout=30)
            except psutil.TimeoutExpired:
                child.kill()
            except psutil.NoSuchProcess:
                pass

    def close(self) -> None:
        self.watcher.close()


def _command() -> list[str]:
    found = shutil.which("mha-explorer")
    if found is None:
        sys.exit("mha-explorer is not installed in this environment (pip install -e .)")
    return [found]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f}"


def bench_pairs(launcher: Launcher, repeat: int) -> None:
    commands = {"mha-explorer": _command(), "python -m mha_explorer": [sys.executable, "-m", "mha_explorer"],
                "bare PySide6 main window": [sys.executable, "-c", BARE_WINDOW]}
    launcher.baseline()  # the file cache warm for every launch, the project's bytecode written
    for argv in commands.values():
        launcher.window(argv)
    rounds: list[tuple[tuple[float, float], dict[str, Launch]]] = []
    print(f"\n1. window visible on the X screen against the baseline, {repeat} rounds: the baseline, "
          f"then the windows, each round starting with the next one (the launch right after the "
          f"baseline's torch import runs slower) ({load()})")
    names = list(commands)
    for i in range(repeat):
        base = launcher.baseline()
        order = names[i % len(names):] + names[:i % len(names)]
        launches = {name: launcher.window(commands[name]) for name in order}
        rounds.append((base, launches))
        shown = ", ".join(f"{name} {_ms(launches[name].mapped)} ms (ratio "
                          f"{launches[name].mapped / base[0]:.2f})" for name in commands)
        print(f"  round {i + 1}: baseline {_ms(base[0])} ms; {shown}", flush=True)
    base, base_cpu = (statistics.median(r[0][k] for r in rounds) for k in (0, 1))
    print(f"  baseline (import torch; from PySide6 import QtWidgets): median {_ms(base)} ms, "
          f"{_ms(base_cpu)} ms of CPU")
    for name in commands:
        mapped, painted, cpu = (statistics.median(getattr(r[1][name], k) for r in rounds)
                                for k in ("mapped", "painted", "cpu"))
        ratio = statistics.median(r[1][name].mapped / r[0][0] for r in rounds)
        cpu_ratio = statistics.median(r[1][name].cpu / r[0][1] for r in rounds)
        goal = " (goal <= 0.40)" if name == "mha-explorer" else ""
        print(f"  {name}: mapped {_ms(mapped)} ms, first pixels {_ms(painted)} ms, {_ms(cpu)} ms of "
              f"CPU when mapped (medians); ratio {ratio:.2f}{goal}, of CPU {cpu_ratio:.2f}")
    print(f"  ({load()})")


def bench_first_heatmaps(launcher: Launcher, repeat: int) -> None:
    runs: dict[str, list[Launch]] = {"1": [], "0": []}
    print(f"\n2. first launches through launcher.main, with and without the early engine, {repeat} "
          f"each, alternately ({load()})")
    for _ in range(repeat):
        for early in runs:
            runs[early].append(launcher.window([sys.executable, "-c", MARKED_LAUNCH], EARLY=early))
    for early, done in runs.items():
        how = "with the early engine" if early == "1" else "without it (torch loads in the window's process)"
        names = [n for n in MARK_ORDER if all(n in run.marks for run in done)]
        line = ", ".join(f"{n} {_ms(statistics.median(r.marks[n] for r in done))}" for n in names)
        after = statistics.median(r.marks["heatmaps drawn"] - r.mapped for r in done
                                  if "heatmaps drawn" in r.marks) if all(
            "heatmaps drawn" in r.marks for r in done) else float("nan")
        print(f"  {how}: heatmaps drawn {_ms(after)} ms after the window was mapped (goal <= 2000)")
        print(f"    medians, ms from launch: {line}")
        print(f"    each: mapped {', '.join(_ms(r.mapped) for r in done)}; heatmaps "
              f"{', '.join(_ms(r.marks.get('heatmaps drawn', float('nan'))) for r in done)}")
    print(f"  ({load()})")


def bench_in_process(repeat: int) -> None:
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtCore import QElapsedTimer, QEventLoop, Qt, QTimer

    from mha_explorer.core.config import MHAConfig
    from mha_explorer.core.plan.memory import default_budget, estimate
    from mha_explorer.qt.shell.app import application, build_window

    print(f"\n3. in this process, offscreen ({load()})")
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

    # edit -> table: time from the edit to the table's repaint having run
    times = []
    for i in range(repeat * 4):
        t0 = time.perf_counter()
        ctrl.update(d_model=512 + 64 * ((i % 4) + 1), n_heads=8)
        table.viewport().repaint()
        times.append((time.perf_counter() - t0) * 1000)
    print(f"  config edit -> shapes table updated: median {statistics.median(times):.2f} ms, "
          f"max {max(times):.2f} ms (goal <= 16 ms)")

    # stalls while the worker computes the largest config that fits the budget
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
    edited = time.perf_counter()  # the views' own reaction to the edit, before the loop runs
    loop.exec()
    rendered = time.perf_counter()
    tick.stop()
    done = finished_at[-1] if finished_at else rendered
    during = [(gap, when) for when, gap in stalls if when <= done]
    worst = sorted(during, reverse=True)[:3]
    print(f"  largest config computed: D={cfg.d_model} H={cfg.H} B={cfg.batch} T={cfg.T} in "
          f"{done - t0:.2f} s; longest event-loop stall while the worker computed "
          f"{worst[0][0] * 1000:.0f} ms over {len(during)} ticks (goal <= 50 ms); "
          f"then the views rendered the new trace in {(rendered - done) * 1000:.0f} ms")
    ends = ", ".join(f"{(when - t0) * 1000:.0f} ms ({gap * 1000:.0f} ms long)" for gap, when in worst)
    print(f"  the edit itself took {(edited - t0) * 1000:.0f} ms before the loop ran; "
          f"the longest stalls ended at {ends} after the edit")
    window.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=6,
                   help="rounds (a multiple of 3 puts each window first equally often)")
    p.add_argument("--cpus", help="taskset CPU list for every launch, e.g. 0,1 (default: all)")
    p.add_argument("--launches-only", action="store_true", help="only 1 and 2, the launches")
    p.add_argument("--heatmaps-only", action="store_true", help="only 2, the first heatmaps")
    args = p.parse_args()
    cpus = args.cpus or ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
    print(f"start-up on Xvfb, launches on CPUs {cpus}; {load()}")
    with x_server() as display:
        launcher = Launcher(display, args.cpus)
        try:
            if not args.heatmaps_only:
                bench_pairs(launcher, args.repeat)
            bench_first_heatmaps(launcher, args.repeat)
        finally:
            launcher.close()
    if not (args.launches_only or args.heatmaps_only):
        bench_in_process(args.repeat)
    print(f"\n{load()}")


if __name__ == "__main__":
    main()
