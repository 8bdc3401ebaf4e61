"""How long the shapes table takes to follow a config edit, painted (prints, asserts nothing).

For each edit of d_model (128 … 2048 and back, three rounds) the time from
``controller.update(...)`` to the table's viewport repainted, as a person waits for
it: the median and the worst, wall and CPU (CPU is the steadier figure on a shared
machine; the GUI thread does all of it). Goal: one frame, 16 ms.

Run: QT_QPA_PLATFORM=offscreen python benchmarks/bench_tables.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

FRAME_MS = 16.0
WIDTHS = (128, 256, 512, 1024, 2048, 64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from PySide6.QtCore import QEventLoop, QTimer

    from mha_explorer.core.config import MHAConfig
    from mha_explorer.qt.controller import Controller
    from mha_explorer.qt.panels.shapes import ShapesTable
    from mha_explorer.qt.shell.app import application

    app = application()
    controller = Controller(MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu"))
    loop = QEventLoop()
    controller.trace_ready.connect(loop.quit)
    QTimer.singleShot(120_000, loop.quit)
    controller.start()
    loop.exec()
    table = ShapesTable(controller)
    table.resize(900, 600)
    table.show()
    app.processEvents()

    wall, cpu = [], []
    for _ in range(args.rounds):
        for d_model in WIDTHS:
            c0, t0 = time.process_time(), time.perf_counter()
            controller.update(d_model=d_model)
            table.viewport().repaint()  # the paint is part of what a person waits for
            cpu.append(1000 * (time.process_time() - c0))
            wall.append(1000 * (time.perf_counter() - t0))
            app.processEvents()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {len(wall)} edits")
    print(f"config edit to table painted: median {statistics.median(wall):.1f} ms wall "
          f"({statistics.median(cpu):.1f} ms CPU), worst {max(wall):.1f} ms; goal {FRAME_MS:.0f} ms")
    controller.shutdown()
    controller.jobs.thread.wait(60_000)


if __name__ == "__main__":
    main()
