"""How long closing the main window takes, in several states (prints, asserts nothing).

States: starting (closed 0.2 s after the start, while torch is being imported); idle;
compute (a trace of D 2048, H 16, T 2048 under way); tiles computing (D 8, H 1, T 1024,
1 × 1 blocks: a million tiles); decode computing (the longest decode the dock computes);
lab training. Each state runs in a fresh process: the window is built, the work started
and given a moment to be under way, then ``window.close()`` is timed (goal: at most 0.5 s).

Run: QT_QPA_PLATFORM=offscreen python benchmarks/quit_latency.py [--repeat 3] [--state tiles]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

PROBE = r"""
import json, sys, tempfile, time
from mha_explorer.core.config import MHAConfig
from mha_explorer.qt.shell.app import application, build_window
from mha_explorer.qt.shell.settings import Preferences

state = sys.argv[1]
app = application()
settings = tempfile.mkdtemp(prefix="quit-latency-")
configs = {"starting": MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu"),
           "idle": MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu"),
           "compute": MHAConfig(d_model=2048, n_heads=16, batch=1, seq=2048, device="cpu"),
           "tiles": MHAConfig(d_model=8, n_heads=1, batch=1, seq=1024, device="cpu"),
           "decode": MHAConfig(d_model=2048, n_heads=16, batch=1, seq=6, device="cpu"),
           "lab": MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu")}
window = build_window(configs[state], Preferences(settings + "/settings.ini"))
window.show()
c = window.controller
traced, progress = [], []
c.trace_ready.connect(lambda *_: traced.append(1))
c.compute_progressed.connect(progress.append)
if state == "compute":
    window.compute_gate.start()  # a trace this large waits to be asked
else:
    c.start()

def spin(seconds, until=lambda: False):
    end = time.monotonic() + seconds
    while time.monotonic() < end and not until():
        app.processEvents()
        time.sleep(0.005)

if state == "starting":
    spin(0.2)
    t0 = time.perf_counter()
    window.close()
    print(json.dumps({"state": state, "close_s": time.perf_counter() - t0, "busy_when_closed": not traced}))
    sys.exit(0)
if state == "compute":
    spin(120, lambda: any(0 < f < 1 for f in progress))
    t0 = time.perf_counter()
    window.close()
    print(json.dumps({"state": state, "close_s": time.perf_counter() - t0, "busy_when_closed": not traced}))
    sys.exit(0)
spin(120, lambda: bool(traced))
answered = []
c.jobs.done.connect(lambda d: answered.append((d.kind, d.id)))
gen = window.generation_panel
if state == "tiles":
    window.docks["generation"].raise_()
    gen.tabs.setCurrentIndex(1)
    gen.br_spin.setValue(1)
    gen.bc_spin.setValue(1)
elif state == "decode":
    window.docks["generation"].raise_()
    gen.prompt_spin.setValue(256)
    gen.steps_spin.setValue(256)
elif state == "lab":
    page = window.lab.build()
    spin(60, lambda: page.ready)
    page.d_model.setValue(8)
    page.steps.setValue(10**6)
    page.analyse.setChecked(False)
    page.sweep_heads.setText("2")
    page.sweep_button.click()
    spin(60, lambda: page.progress.text().startswith("h=2: step"))
spin(1.5)  # the job is under way
kind = {"tiles": "tiles", "decode": "decode"}.get(state)
busy = state == "lab" or (kind is not None and (kind, c.jobs.latest(kind)) not in answered)
t0 = time.perf_counter()
window.close()
closed = time.perf_counter() - t0
print(json.dumps({"state": state, "close_s": closed, "busy_when_closed": busy}))
"""


STATES = ("starting", "idle", "compute", "tiles", "decode", "lab")


def run_state(state: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, state], capture_output=True, text=True, timeout=900,
                         env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    for line in reversed(out.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"{state}: no figure\n{out.stderr[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--state", action="append", choices=STATES)
    args = parser.parse_args()
    for state in args.state or STATES:
        runs = [run_state(state) for _ in range(args.repeat)]
        times = [r["close_s"] for r in runs]
        busy = sum(r["busy_when_closed"] for r in runs)
        print(f"{state:7s} close: median {statistics.median(times) * 1000:8.0f} ms, "
              f"max {max(times) * 1000:8.0f} ms (busy when closed in {busy} of {len(runs)}; goal <= 500 ms)",
              flush=True)


if __name__ == "__main__":
    main()
