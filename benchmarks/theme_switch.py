"""How long switching the theme holds the window (prints, asserts nothing).

The main window on its default docks is switched light -> dark -> light ``--repeat``
times; each switch is timed from set_theme to the end of the event-loop turn that
delivers the change (the window is frozen for all of it).

Run: QT_QPA_PLATFORM=offscreen python benchmarks/theme_switch.py [--repeat 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()

    from mha_explorer.core.config import MHAConfig
    from mha_explorer.qt.shell.app import application, build_window
    from mha_explorer.qt.shell.settings import Preferences
    from mha_explorer.qt.shell.theme import other_theme

    app = application()
    window = build_window(MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu"),
                          Preferences(os.path.join(tempfile.mkdtemp(), "settings.ini")))
    window.resize(1280, 720)
    window.show()
    traced: list[int] = []
    window.controller.trace_ready.connect(lambda *_: traced.append(1))
    window.controller.start()
    end = time.monotonic() + 120
    while not traced and time.monotonic() < end:
        app.processEvents()
        time.sleep(0.005)
    for _ in range(50):  # the docks built after the first trace settle
        app.processEvents()
        time.sleep(0.01)
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        window.set_theme(other_theme(window.theme))
        app.processEvents()
        times.append(time.perf_counter() - t0)
    window.close()
    print(f"theme switch: median {statistics.median(times) * 1000:6.0f} ms, "
          f"min {min(times) * 1000:6.0f} ms, max {max(times) * 1000:6.0f} ms ({args.repeat} switches)")


if __name__ == "__main__":
    main()
