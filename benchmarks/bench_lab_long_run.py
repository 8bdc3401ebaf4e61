"""The Lab opening the longest run its files may hold, while the window's loop is watched.

Saves a tiny trained run, then widens its run.json to the most rows the schema allows
(run_schema.MAX_ROWS evaluations, as a 1,000,000-step run evaluated every 10th step
writes), opens it in a LabPage and prints how long the page took and the longest stop
of the event loop (a 5 ms timer's largest gap) while it loaded and drew. The goal is no
stop over 100 ms; judge it on a quiet machine (the load average is printed).

    python benchmarks/bench_lab_long_run.py [--rows N]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QElapsedTimer, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from mha_explorer.core.lab.model import LabModelSpec  # noqa: E402
from mha_explorer.core.lab.run_schema import MAX_ROWS  # noqa: E402
from mha_explorer.core.lab.store import save_run  # noqa: E402
from mha_explorer.core.lab.train import TrainSettings, train  # noqa: E402
from mha_explorer.qt.lab.page import LabPage  # noqa: E402


def long_run(folder: Path, rows: int) -> None:
    spec = LabModelSpec(task="induction", vocab=8, n=8, d_model=8, heads=2, layers=2)
    save_run(train(spec, TrainSettings(steps=10, batch=4, eval_every=10, eval_size=8)), folder)
    meta = json.loads((folder / "run.json").read_text())
    meta["settings"].update(steps=rows * 10, eval_every=10)
    for key in ("curve", "entropy", "scores"):
        last = meta[key][-1]
        meta[key] = [[10 * (i + 1), *last[1:]] for i in range(rows)]
    (folder / "run.json").write_text(json.dumps(meta))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=MAX_ROWS)
    rows = parser.parse_args().rows
    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "run"
        long_run(folder, rows)
        page = LabPage()
        page.resize(1280, 720)
        page.show()
        while not page.ready:
            app.processEvents()
        gaps, clock = [0.0], QElapsedTimer()
        clock.start()

        def tick() -> None:
            gaps.append(clock.restart())

        timer = QTimer(interval=5)
        timer.timeout.connect(tick)
        timer.start()
        began = time.perf_counter()
        page.load_folder(str(folder))
        while page.running:
            app.processEvents()
        for _ in range(50):  # the drawing scheduled after the answer
            app.processEvents()
            time.sleep(0.005)
        took = time.perf_counter() - began
        timer.stop()
        page.shutdown()
    print(f"load average {os.getloadavg()[0]:.1f}; {rows:,} rows: opened in {took:.1f} s "
          f"({page.progress.text()}), longest stop of the loop {max(gaps):.0f} ms")


if __name__ == "__main__":
    main()
