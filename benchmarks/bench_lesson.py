"""The longest stop of the window's event loop in each step of a whole lesson (prints, asserts
nothing): start, the first choice of each trained model with an empty model cache, random
weights, presets, every stage, presentation, Lab training, induction heads, generation, export,
a theme switch and quit; and how soon a model's choice shows its progress.

Goal: every step's longest stop at most 100 ms on a quiet machine, and progress on screen within
0.5 s of the first choice of Gemma 3. The window is 1280×720 on the default config; a stall
watchdog (qt/stall_watchdog.py) prints the GUI thread's stack for every stop over the limit
with --stacks. The model cache is a fresh temporary folder unless --warm-cache is given
(a first conversion of Gemma 3 writes about 1 GB there). Either way, the first use of Gemma 3
in the process loads its tokenizer in one call that holds the interpreter lock (tokenizers'
Tokenizer.from_str), which --stacks names when it shows.

Run: QT_QPA_PLATFORM=offscreen python benchmarks/bench_lesson.py [--repeat 1] [--stacks] [--warm-cache]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "qt"))

LIMIT_MS = 100.0


def one_lesson(args, folder: str) -> list:
    import lesson  # tests/qt/lesson.py: the steps the test drives too
    from PySide6.QtCore import QTimer

    from mha_explorer.core.config import MHAConfig
    from mha_explorer.qt.shell.app import application, build_window
    from mha_explorer.qt.shell.settings import Preferences
    from mha_explorer.qt.stall_watchdog import StallWatchdog

    app = application()
    dog = StallWatchdog(LIMIT_MS, report=None if args.stacks else (lambda _s: None))
    dog.start()
    dog.label = "building the window (before its first frame)"
    built = time.perf_counter()
    window = build_window(MHAConfig(), Preferences(os.path.join(folder, "settings.ini")))
    window.resize(1280, 720)
    window.show()
    app.processEvents()
    print(f"  (the window built and shown in {1000 * (time.perf_counter() - built):.0f} ms, "
          "before its event loop runs: bench_startup.py measures that)")
    QTimer.singleShot(0, window.compute_gate.start)  # as run_app starts it

    def said(r) -> None:
        over = [s for s in r.stalls if s.ms > LIMIT_MS]
        shown = r.progress_after_s
        extra = f", progress after {1000 * shown:.0f} ms" if shown is not None else ""
        print(f"  {r.name:<34} longest stop {r.longest_ms:7.0f} ms  ({len(over)} over {LIMIT_MS:.0f} ms, "
              f"step {r.seconds:5.1f} s{extra}, load {os.getloadavg()[0]:.2f})", flush=True)

    steps = lesson.lesson_steps(folder, lab=not args.no_lab)
    results = lesson.run_lesson(window, steps, dog, said)
    dog.stop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--stacks", action="store_true", help="print each stall's stack as it happens")
    parser.add_argument("--warm-cache", action="store_true", help="use the usual model cache")
    parser.add_argument("--no-lab", action="store_true", help="leave the Lab's training out")
    args = parser.parse_args()
    rounds = []
    for r in range(args.repeat):
        folder = tempfile.mkdtemp(prefix="mha-explorer-lesson-")
        if not args.warm_cache:
            os.environ["MHA_EXPLORER_CACHE_DIR"] = os.path.join(folder, "cache")
        print(f"-- lesson {r + 1} (load {os.getloadavg()[0]:.2f}, cache "
              f"{'usual' if args.warm_cache else 'empty'})", flush=True)
        try:
            rounds.append(one_lesson(args, folder))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    if args.repeat > 1:
        print("-- median of the rounds")
        for i, first in enumerate(rounds[0]):
            worst = statistics.median(run[i].longest_ms for run in rounds)
            print(f"  {first.name:<34} longest stop {worst:7.0f} ms")


if __name__ == "__main__":
    main()
