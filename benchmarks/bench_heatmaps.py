"""How fast the heatmap panel follows the engine, and what the large config costs.

A script that prints figures, not a test:

    python benchmarks/bench_heatmaps.py            # refresh and config-edit timings
    python benchmarks/bench_heatmaps.py --large    # plus d_model 4096, 32 heads, B 8, T 4096

1. Refresh: the panel redraws every head of a stage (build the maps from the
   trace, setImage, paint the whole panel) against a matplotlib grid of the
   same arrays (Agg: imshow per subplot + canvas.draw, and the kinder variant
   that reuses the images with set_data). Goal: 30x faster than imshow + draw.
1b. New maps: what one HeatmapCell costs to build (median of 30, goal 3 ms),
   and the first time a panel at 'input' (one map) steps to softmax with 16,
   64 and 128 heads: the cells built, laid out and painted (median of 3 fresh
   panels), and the same step again, which rebuilds the cells beyond the pool.
2. Config edit: from controller.update(...) to the panel's images updated,
   at d_model 768, 12 heads, batch 2, T 128 (goal: 100 ms), with and without
   the controller's debounce.
3. --large: the engine on the large config in a child process: wall time,
   peak RSS (the child's ru_maxrss, exact), progress, and how fast cancel stops it.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

PANEL_SIZE = (1400, 900)  # pixels; the matplotlib figure gets the same
REFRESH_CASES = ((8, 16), (12, 128), (32, 512))  # heads, T (maps are T × T)
FIRST_SHOW_HEADS = (16, 64, 128)  # T 16: the cost is the cells, not the data
EDIT_CONFIG = dict(d_model=768, n_heads=12, batch=2, seq=128)
LARGE_CONFIG = dict(d_model=4096, n_heads=32, batch=8, seq=4096)
LARGE_RSS_GOAL_GIB = 3.0


def timed_ms(fn, repeats: int) -> tuple[float, float]:
    """(median CPU ms, best wall ms) of ``fn`` after one warm-up call.

    CPU time of this process is the steadier figure on a shared machine: the
    GUI thread does all the drawing, so other processes cannot inflate it.
    """
    fn()  # warm caches, LUTs and fonts
    cpu, wall = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
    return 1000 * statistics.median(cpu), 1000 * min(wall)


def wait_for(app, signal, timeout_ms: int = 120_000) -> None:
    """Run the event loop until ``signal`` fires: no sleeps, no polling."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    signal.connect(loop.quit)
    QTimer.singleShot(timeout_ms, loop.quit)
    loop.exec()
    signal.disconnect(loop.quit)


def started_panel(app, cfg, stage: str, marks: dict | None = None):
    """A shown panel on a started controller, at ``stage``, with its first trace.

    ``marks``, when given, receives the time of the last compute_started and
    trace_ready, taken before the panel's own handlers run.
    """
    from mha_explorer.qt.controller import Controller
    from mha_explorer.qt.heads.heads_panel import HeatmapPanel

    ctrl = Controller(cfg)
    if marks is not None:
        ctrl.compute_started.connect(lambda: marks.__setitem__("sent", time.perf_counter()))
        ctrl.trace_ready.connect(lambda _t: marks.__setitem__("ready", time.perf_counter()))
    panel = HeatmapPanel(ctrl)
    panel.resize(*PANEL_SIZE)
    panel.show()
    ctrl.start()
    wait_for(app, ctrl.trace_ready)
    ctrl.set_stage(stage)
    app.processEvents()
    return ctrl, panel


def matplotlib_grid(arrays, levels):
    import math

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    cols = math.ceil(math.sqrt(len(arrays)))
    rows = math.ceil(len(arrays) / cols)
    fig = Figure(figsize=(PANEL_SIZE[0] / 100, PANEL_SIZE[1] / 100), dpi=100)
    canvas = FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[len(arrays):]:
        ax.set_axis_off()

    def imshow_and_draw():
        for h, (ax, a) in enumerate(zip(axes, arrays)):
            ax.clear()
            ax.imshow(a, cmap="viridis", vmin=levels[0], vmax=levels[1],
                      interpolation="nearest", aspect="auto")
            ax.set_title(f"head {h}", fontsize=8)
        canvas.draw()

    imshow_and_draw()
    images = [ax.images[0] for ax in axes[:len(arrays)]]

    def set_data_and_draw():
        for im, a in zip(images, arrays):
            im.set_data(a)
        canvas.draw()

    return imshow_and_draw, set_data_and_draw


def bench_refresh(app) -> None:
    from mha_explorer.core.config import MHAConfig
    from mha_explorer.core.display.head_maps import head_entropies

    print("1. Refresh every head at softmax: CPU ms (median) / best wall ms; "
          "panel and figure 1400 x 900 px")
    print(f"   {'heads x T²':>12} {'panel':>15} {'mpl imshow+draw':>17} {'ratio':>6} "
          f"{'mpl set_data+draw':>19} {'ratio':>6}")
    for heads, T in REFRESH_CASES:
        cfg = MHAConfig(d_model=heads * 16, n_heads=heads, batch=1, seq=T)
        ctrl, panel = started_panel(app, cfg, "softmax")
        repeats = 15 if T < 512 else 7

        def refresh_and_paint():
            panel.refresh()
            panel.grab()  # paints every cell: the LUT mapping happens here

        panel_cpu, panel_wall = timed_ms(refresh_and_paint, repeats)
        weights = ctrl.trace.tensors["softmax"]["weights"][0]
        arrays = [weights[h] for h in range(heads)]
        imshow_draw, set_data_draw = matplotlib_grid(arrays, (0.0, 1.0))
        mpl_cpu, mpl_wall = timed_ms(imshow_draw, max(3, repeats // 3))
        set_cpu, set_wall = timed_ms(set_data_draw, max(3, repeats // 3))
        print(f"   {f'{heads} x {T}²':>12} {panel_cpu:6.1f} / {panel_wall:6.1f} "
              f"{mpl_cpu:7.0f} / {mpl_wall:7.0f} {mpl_cpu / panel_cpu:5.0f}x "
              f"{set_cpu:8.0f} / {set_wall:8.0f} {set_cpu / panel_cpu:5.0f}x")
        entropy_cpu, _ = timed_ms(lambda: head_entropies(ctrl.trace, 0), 3)
        print(f"   {'':>12} (a new trace adds {entropy_cpu:.1f} ms once, for the entropies)")
        ctrl.shutdown()
        panel.close()
        panel.deleteLater()
        app.processEvents()


def bench_new_maps(app, cells: int = 30, panels: int = 3) -> None:
    from PySide6.QtWidgets import QWidget

    from mha_explorer.core.config import MHAConfig
    from mha_explorer.qt.heads.head_cell import HeatmapCell

    host = QWidget()
    HeatmapCell(parent=host)  # fonts, styles and imports
    built, times = [], []
    for _ in range(cells):
        t0 = time.perf_counter()
        built.append(HeatmapCell(parent=host))
        times.append(time.perf_counter() - t0)
    print(f"1b. New maps: HeatmapCell() {1000 * statistics.median(times):.2f} ms "
          f"(median of {cells}, best {1000 * min(times):.2f})")
    host.deleteLater()
    print(f"   {'heads':>6} {'first step to softmax':>22} {'= cells + paint':>17} "
          f"{'again':>7}   (ms, median of {panels} panels)")
    for heads in FIRST_SHOW_HEADS:
        runs = []
        for _ in range(panels):
            cfg = MHAConfig(d_model=heads * 4, n_heads=heads, batch=1, seq=16)
            ctrl, panel = started_panel(app, cfg, "input")
            panel.grab()
            t0 = time.perf_counter()
            ctrl.set_stage("softmax")  # builds, lays out and fills the cells
            t1 = time.perf_counter()
            app.processEvents()
            panel.grab()
            t2 = time.perf_counter()
            ctrl.set_stage("input")
            app.processEvents()
            panel.grab()
            t3 = time.perf_counter()
            ctrl.set_stage("softmax")
            app.processEvents()
            panel.grab()
            runs.append((t2 - t0, t1 - t0, t2 - t1, time.perf_counter() - t3))
            ctrl.shutdown()
            panel.close()
            panel.deleteLater()
            app.processEvents()
        first, cells_ms, paint, again = (1000 * statistics.median(r[i] for r in runs)
                                         for i in range(4))
        print(f"   {heads:>6} {first:22.0f} {cells_ms:8.0f} + {paint:5.0f} {again:7.0f}")


def bench_config_edit(app, edits: int = 8) -> None:
    from mha_explorer.core.config import MHAConfig

    marks: dict[str, float] = {}
    ctrl, panel = started_panel(app, MHAConfig(**EDIT_CONFIG), "softmax", marks)
    results: dict[str, list[dict[str, float]]] = {"debounced": [], "immediate": []}
    for i in range(edits):
        for way, runs in results.items():
            seed = 2 * i + (way == "immediate") + 1  # a new seed: new weights, same shapes
            t0 = time.perf_counter()
            ctrl.update(seed=seed)
            if way == "immediate":
                ctrl.request_compute(immediate=True)  # skip the debounce timer
            wait_for(app, panel.images_updated)
            t_images = time.perf_counter()
            panel.grab()  # and painted
            t_painted = time.perf_counter()
            runs.append({
                "wait": marks["sent"] - t0, "compute": marks["ready"] - marks["sent"],
                "panel": t_images - marks["ready"], "images": t_images - t0,
                "painted": t_painted - t0, "engine": ctrl.trace.seconds})
    print(f"2. Config edit -> heatmaps updated, d_model 768, 12 heads, batch 2, T 128 "
          f"(median of {edits} edits of the seed, ms)")
    print(f"   {'':>10} {'to images':>10} {'painted':>8} = {'debounce':>9} + {'worker':>7} "
          f"(engine loop) + {'panel':>6} + paint")
    for way, runs in results.items():
        m = {k: 1000 * statistics.median(r[k] for r in runs) for k in runs[0]}
        print(f"   {way:>10} {m['images']:10.1f} {m['painted']:8.1f}   {m['wait']:9.1f}   "
              f"{m['compute']:7.1f} ({m['engine']:6.1f})       {m['panel']:6.1f}   "
              f"{m['painted'] - m['images']:5.1f}")
    ctrl.shutdown()
    panel.close()


LARGE_CHILD = """
import sys, time
from mha_explorer.core.engine import runner as engine
from mha_explorer.core.config import MHAConfig
cfg = MHAConfig(**{config})
cancel_at = {cancel_at}
state = {{"last": -1.0, "stop": False}}
def progress(f):
    if f - state["last"] >= 0.05 or f >= 1.0:
        state["last"] = f
        print(f"progress {{f:5.1%}} at {{time.perf_counter() - t0:6.1f}} s", flush=True)
    if cancel_at is not None and f >= cancel_at:
        state["stop"] = True
        state["t_cancel"] = time.perf_counter()
t0 = time.perf_counter()
try:
    trace = engine.run(cfg, progress=progress, cancel=lambda: state["stop"])
except engine.Cancelled:
    waited = 1000 * (time.perf_counter() - state["t_cancel"])
    print(f"cancelled {{waited:.0f}} ms after the request", flush=True)
else:
    print(f"done mode={{trace.mode}} rows={{trace.rows}} engine {{trace.seconds:.1f}} s; "
          + ", ".join(f"{{k}} {{v:.1f}}" for k, v in trace.timings.items()), flush=True)
"""


def run_large(cancel_at: float | None) -> tuple[float, float]:
    """Wall seconds and peak RSS (GiB) of the engine on the large config in a child."""
    code = LARGE_CHILD.format(config=LARGE_CONFIG, cancel_at=cancel_at)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as child:
        for line in child.stdout:
            print("     " + line.rstrip(), flush=True)
    wall = time.perf_counter() - t0
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak_kib <= before:
        print("     (peak RSS below an earlier child's; figure is an upper bound)")
    return wall, peak_kib / 2**20


def bench_large() -> None:
    import psutil

    from mha_explorer.core.config import MHAConfig
    from mha_explorer.core.plan.memory import estimate, format_bytes

    cfg = MHAConfig(**LARGE_CONFIG)
    est = estimate(cfg)
    print(f"3. Large config {LARGE_CONFIG}: {os.cpu_count()} cores, "
          f"{format_bytes(psutil.virtual_memory().total)} RAM")
    print(f"   estimate: keep-everything {format_bytes(est.full_bytes)}, windowed "
          f"{format_bytes(est.windowed_bytes)} (shown rows {est.shown_rows}, blocks of "
          f"{est.chunk_rows})")
    print("   cancel after 5%:")
    run_large(cancel_at=0.05)
    print("   full run:")
    wall, peak = run_large(cancel_at=None)
    verdict = "within" if peak <= LARGE_RSS_GOAL_GIB else "ABOVE"
    print(f"   wall {wall:.1f} s, peak RSS {peak:.2f} GiB ({verdict} the "
          f"{LARGE_RSS_GOAL_GIB:.0f} GiB goal)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--large", action="store_true",
                        help="also run the large config (minutes on 2 cores)")
    parser.add_argument("--large-only", action="store_true", help="only the large config")
    args = parser.parse_args()
    if not args.large_only:
        if not os.environ.get("DISPLAY"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        from PySide6.QtWidgets import QApplication

        app = QApplication.instance() or QApplication(sys.argv)
        bench_refresh(app)
        bench_new_maps(app)
        bench_config_edit(app)
    if args.large or args.large_only:
        bench_large()


if __name__ == "__main__":
    main()
