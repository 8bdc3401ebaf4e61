"""Frame times of the stage view's animation at 1920×1080.

Steps a StageView through every stage with animation on and, on every
animation tick, paints the diagram into a QImage the size of its viewport (the
work a real frame does). Prints, per config, the paint time per frame, the
interval between ticks, and the time each stage change takes to build its
picture. The goal is a median frame under 16.7 ms (60 fps).

    python benchmarks/bench_animation.py                 # offscreen when no display
    python benchmarks/bench_animation.py --speed 0.5 --size 2560x1440
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEventLoop, QTimer  # noqa: E402
from PySide6.QtGui import QImage  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from mha_explorer.core.config import MHAConfig  # noqa: E402
from mha_explorer.core.stages.catalog import STAGE_IDS  # noqa: E402
from mha_explorer.qt.controller import Controller  # noqa: E402
from mha_explorer.qt.stage.stage_view import StageView  # noqa: E402

CONFIGS = {
    "MHA  D=512 H=8 B=2 T=8": MHAConfig(d_model=512, n_heads=8, batch=2, seq=8),
    "GQA  D=4096 H=32 Hkv=8 T=64 causal": MHAConfig(d_model=4096, n_heads=32, n_kv_heads=8, batch=1,
                                                    seq=64, causal=True),
}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def wait(app: QApplication, signal, timeout_ms: int) -> None:
    loop = QEventLoop()
    signal.connect(loop.quit)
    QTimer.singleShot(timeout_ms, loop.quit)
    loop.exec()


def measure(app: QApplication, cfg: MHAConfig, size: tuple[int, int], speed: float) -> dict:
    controller = Controller(cfg)
    controller.start()
    wait(app, controller.trace_ready, 120_000)
    controller.set_speed(speed)
    view = StageView(controller)
    view.resize(*size)
    view.show()
    app.processEvents()

    diagram = view.diagram
    animation = diagram.transition.animation
    viewport = diagram.viewport()
    frame = QImage(viewport.size(), QImage.Format.Format_ARGB32_Premultiplied)
    paints: list[float] = []
    ticks: list[float] = []
    builds: list[float] = []
    last_tick = [0.0]

    def on_tick(_value) -> None:
        now = time.perf_counter()
        if last_tick[0]:
            ticks.append((now - last_tick[0]) * 1000)
        last_tick[0] = now
        t0 = time.perf_counter()
        viewport.render(frame)  # the view paints its scene as it would on screen
        paints.append((time.perf_counter() - t0) * 1000)

    animation.valueChanged.connect(on_tick)
    controller.first_stage()
    for _ in STAGE_IDS[1:]:
        last_tick[0] = 0.0
        t0 = time.perf_counter()
        controller.next_stage()
        builds.append((time.perf_counter() - t0) * 1000)
        wait(app, animation.finished, 10_000)
    animation.valueChanged.disconnect(on_tick)
    view.close()
    controller.shutdown()
    return {"paint": paints, "tick": ticks, "build": builds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1920x1080", help="window size, WxH (default 1920x1080)")
    parser.add_argument("--speed", type=float, default=1.0, help="controller speed (default 1.0)")
    args = parser.parse_args(argv)
    size = tuple(int(n) for n in args.size.lower().split("x"))
    app = QApplication.instance() or QApplication(sys.argv[:1])
    print(f"stage view animation, window {size[0]}×{size[1]}, speed {args.speed}, "
          f"platform {app.platformName()}")
    worst_median = 0.0
    for name, cfg in CONFIGS.items():
        r = measure(app, cfg, size, args.speed)
        paint, tick, build = r["paint"], r["tick"], r["build"]
        median = statistics.median(paint)
        worst_median = max(worst_median, median)
        print(f"\n{name}: {len(paint)} frames over {len(build)} transitions")
        print(f"  paint per frame   median {median:6.2f} ms   p95 {percentile(paint, 0.95):6.2f} ms"
              f"   max {max(paint):6.2f} ms   -> {1000 / median:5.0f} fps paint-bound")
        print(f"  tick interval     median {statistics.median(tick):6.2f} ms   "
              f"p95 {percentile(tick, 0.95):6.2f} ms   -> {1000 / statistics.median(tick):5.0f} fps delivered")
        print(f"  stage change      median {statistics.median(build):6.2f} ms   max {max(build):6.2f} ms"
              "   (building the next picture, once per step)")
    verdict = "meets" if worst_median <= 16.7 else "misses"
    print(f"\nworst median paint {worst_median:.2f} ms: {verdict} the 16.7 ms (60 fps) goal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
