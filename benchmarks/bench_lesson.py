"""The longest stop of the window's event loop in each step of a whole lesson (prints, asserts
nothing): start, the first choice of each trained model with an empty model cache, random
weights, presets, every stage, presentation, Lab training, induction heads, generation, export,
a theme switch and quit; and how soon a model's choice shows its progress.

Goal: every step's longest stop at most 100 ms on a quiet machine, and progress on screen within
0.5 s of the first choice of Gemma 3. The window is 1280×720 on the default config. Each lesson
runs in a fresh process (torch, the models and the tokenizers loaded for the first time), with a
fresh temporary model cache unless --warm-cache is given (a first conversion of Gemma 3 writes
about 1 GB there).

It prints, as the lesson goes, the stack of every stop over 100 ms (qt/stall_watchdog.py: the
GUI thread's stack, or the thread that held the interpreter lock), then a table: per step the
longest stop, the most processor time the GUI thread spent in one turn ("busy": the work a turn
holds, which a loaded machine does not inflate; a stop much longer than its busy time waited for
a core or for the interpreter lock), the stops over 100 ms, the step's time, and the load. With
--repeat N, the median of each column over the lessons too.

Run: QT_QPA_PLATFORM=offscreen python benchmarks/bench_lesson.py [--repeat 1] [--warm-cache] [--no-lab]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "qt"))

LIMIT_MS = 100.0
RESULTS = "lesson-results: "  # the line a lesson's process ends with, read by the parent


def one_lesson(no_lab: bool, folder: str) -> list[dict]:
    import lesson  # tests/qt/lesson.py: the steps the test drives too
    from PySide6.QtCore import QTimer

    from mha_explorer.core.config import MHAConfig
    from mha_explorer.qt.shell.app import application, build_window
    from mha_explorer.qt.shell.settings import Preferences
    from mha_explorer.qt.stall_watchdog import StallWatchdog

    def report(stall) -> None:
        print(f"stall: {stall.describe()}", flush=True)

    app = application()
    dog = StallWatchdog(LIMIT_MS, report=report)
    dog.start()
    dog.label = "building the window (before its first frame)"
    built = time.perf_counter()
    window = build_window(MHAConfig(), Preferences(os.path.join(folder, "settings.ini")))
    window.resize(1280, 720)
    window.show()
    app.processEvents()
    print(f"  (the window built and shown in {1000 * (time.perf_counter() - built):.0f} ms, "
          "before its event loop runs: bench_startup.py measures that)", flush=True)
    QTimer.singleShot(0, window.compute_gate.start)  # as run_app starts it

    rows = []

    def said(r) -> None:
        row = {"step": r.name, "stop": r.longest_ms, "busy": r.busy_ms,
               "over": sum(s.ms > LIMIT_MS for s in r.stalls), "seconds": r.seconds,
               "progress": None if r.progress_after_s is None else 1000 * r.progress_after_s,
               "load": os.getloadavg()[0]}
        rows.append(row)
        print(f"-- {line(row)}", flush=True)

    lesson.run_lesson(window, lesson.lesson_steps(folder, lab=not no_lab), dog, said)
    dog.stop()
    return rows


def line(row: dict) -> str:
    shown = f", progress after {row['progress']:.0f} ms" if row["progress"] is not None else ""
    return (f"{row['step']:<30} longest stop {row['stop']:6.0f} ms, busy {row['busy']:5.0f} ms, "
            f"{row['over']:2d} over {LIMIT_MS:.0f} ms, step {row['seconds']:5.1f} s{shown}, "
            f"load {row['load']:.2f}")


def table(rows: list[dict], title: str) -> None:
    print(f"\n{title}")
    head = ("step", "stop ms", "busy ms", ">100", "step s", "progress", "load")
    print("  {:<30} {:>8} {:>8} {:>5} {:>7} {:>9} {:>5}".format(*head))
    for row in rows:
        shown = f"{row['progress']:.0f}" if row["progress"] is not None else "-"
        print(f"  {row['step']:<30} {row['stop']:8.0f} {row['busy']:8.0f} {row['over']:5d} "
              f"{row['seconds']:7.1f} {shown:>9} {row['load']:5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="lessons, each in a fresh process")
    parser.add_argument("--warm-cache", action="store_true", help="use the usual model cache")
    parser.add_argument("--no-lab", action="store_true", help="leave the Lab's training out")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # one lesson, here
    args = parser.parse_args()
    if args.one:
        folder = tempfile.mkdtemp(prefix="mha-explorer-lesson-")
        if not args.warm_cache:
            os.environ["MHA_EXPLORER_CACHE_DIR"] = os.path.join(folder, "cache")
        try:
            rows = one_lesson(args.no_lab, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        print(RESULTS + json.dumps(rows), flush=True)
        return
    print(f"{os.cpu_count()} cores; cache {'usual' if args.warm_cache else 'empty, fresh for each lesson'}")
    rounds = []
    for r in range(args.repeat):
        print(f"\n== lesson {r + 1} of {args.repeat} (load {os.getloadavg()[0]:.2f})", flush=True)
        command = [sys.executable, os.path.abspath(__file__), "--one"]
        command += ["--warm-cache"] * args.warm_cache + ["--no-lab"] * args.no_lab
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        rows = None
        for text in child.stdout:
            if text.startswith(RESULTS):
                rows = json.loads(text[len(RESULTS):])
            elif "propagateSizeHints" not in text and "does not support raise" not in text:
                print(text, end="", flush=True)  # the offscreen platform's notes say nothing here
        code = child.wait()
        if rows is None:
            print(f"   the lesson's process ended with exit code {code} before its last step")
            continue
        rounds.append(rows)
        table(rows, f"lesson {r + 1}: the longest stop of the event loop per step (goal ≤ {LIMIT_MS:.0f} ms)")
    if len(rounds) > 1:
        median = [{key: (row[key] if key == "step" else statistics.median(
                      run[i][key] for run in rounds if run[i][key] is not None)
                      if any(run[i][key] is not None for run in rounds) else None)
                   for key in row} for i, row in enumerate(rounds[0])]
        for row in median:
            row["over"] = round(row["over"])
        table(median, f"median of {len(rounds)} lessons")


if __name__ == "__main__":
    main()
