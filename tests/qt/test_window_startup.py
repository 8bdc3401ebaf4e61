"""Start-up and quitting that a person can rely on: a bad memory-budget variable is a
warning and the default, a restored config that is large or whose last computation did
not end well waits for the Compute button (F5), and closing the window during a long
computation returns promptly with the thread stopped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from waits import TRACE_MS, UI_MS

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.memory import BUDGET_ENV, DEFAULT_BUDGET_FRACTION, available_ram
from mha_explorer.qt.shell.app import build_window
from mha_explorer.qt.shell.compute_gate import LAST_RUN_KEY
from mha_explorer.qt.shell.settings import Preferences

REPO = Path(__file__).resolve().parents[2]
SMALL = MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu")


@pytest.mark.parametrize("value", ["garbage", "-1", "nan", "   x", "9" * 400])
def test_a_bad_budget_variable_is_a_warning_and_the_default(qtbot, make_window, monkeypatch, value):
    monkeypatch.setenv(BUDGET_ENV, value)
    window = make_window(SMALL)  # waits for the trace: the run did not fail on the variable
    c = window.controller
    assert c.current_trace is not None
    assert BUDGET_ENV in window.status_view.message  # still said beside the result
    expected = int(available_ram() * DEFAULT_BUDGET_FRACTION)
    assert abs(c.budget() - expected) <= 0.05 * expected  # free memory moves a little meanwhile


def _restored_window(qtbot, path, cfg: MHAConfig, last: str | None):
    """As at start-up: preferences from ``path`` holding ``cfg`` and how its last run ended."""
    prefs = Preferences(str(path))
    prefs.save_config(cfg)
    if last is not None:
        prefs.set_value(LAST_RUN_KEY, last)
    assert prefs.sync()
    prefs = Preferences(str(path))  # read back from the file, like the next start
    window = build_window(prefs.load_config(), prefs)
    qtbot.addWidget(window)
    window.resize(1280, 720)
    window.show()
    qtbot.waitExposed(window, timeout=UI_MS)
    window.compute_gate.start()
    return window


def test_a_first_launch_says_what_it_waits_for_until_the_first_result(qtbot, tmp_path):
    window = _restored_window(qtbot, tmp_path / "settings.ini", SMALL, None)
    c = window.controller
    try:
        assert window.status_view.message == "loading PyTorch…"  # before torch has loaded
        said_when_loaded: list[str] = []
        c.engine_loaded.connect(lambda _s: said_when_loaded.append(window.status_view.message))
        with qtbot.waitSignal(c.trace_ready, timeout=TRACE_MS):
            pass
        loaded = said_when_loaded[0]
        assert loaded.startswith("PyTorch loaded in") and loaded.endswith("; computing…")
        assert "computing" not in window.status_view.message  # the result's own notes now
    finally:
        window.close()


@pytest.mark.parametrize("last", ["cancelled", "failed", "running"])
def test_a_config_whose_last_run_did_not_end_well_waits_for_compute(qtbot, tmp_path, last):
    window = _restored_window(qtbot, tmp_path / "settings.ini", SMALL, last)
    c = window.controller
    try:
        qtbot.wait(300)  # longer than the debounce: nothing is on its way
        assert c.trace is None and not c.computing
        assert window.compute_gate.button.isVisible()
        assert window.status_view.message.startswith("not computed yet: the last computation")
        assert "F5" in window.status_view.message
        with qtbot.waitSignal(c.trace_ready, timeout=TRACE_MS):
            qtbot.keyClick(window, Qt.Key.Key_F5)
        assert not window.compute_gate.button.isVisible()
        assert window.prefs.value(LAST_RUN_KEY, "", str) == "done"
    finally:
        window.close()
    assert not c.is_running()


def test_a_large_restored_config_waits_and_a_small_one_computes_at_once(qtbot, tmp_path):
    # 16 heads × 16,384² fp32 scores alone: 16 · 2^28 · 4 bytes = 16 GiB in full, and the
    # windowed estimate still holds the weights (4 · 4,096² · 4 bytes = 256 MiB) and more
    large = MHAConfig(d_model=4096, n_heads=16, batch=4, seq=16_384, device="cpu")
    window = _restored_window(qtbot, tmp_path / "large.ini", large, None)
    try:
        assert window.compute_gate.held is not None
        assert window.compute_gate.button.isVisible() and window.controller.trace is None
        assert "estimate" in window.status_view.message
        qtbot.wait(300)
        assert not window.controller.computing
    finally:
        window.close()
    small = _restored_window(qtbot, tmp_path / "small.ini", SMALL, "done")
    try:
        assert small.compute_gate.held is None and not small.compute_gate.button.isVisible()
        qtbot.waitUntil(lambda: small.controller.current_trace is not None, timeout=TRACE_MS)
    finally:
        small.close()


def test_closing_during_a_long_computation_stops_it_and_the_next_start_knows(qtbot, tmp_path):
    """Closing mid-computation ends the jobs thread (how long the close takes is
    benchmarks/quit_latency.py's figure, state "compute"), and the next start, seeing the
    run never finished, waits to be asked rather than starting it again."""
    cfg = MHAConfig(d_model=2048, n_heads=16, batch=1, seq=2048, device="cpu")
    path = tmp_path / "settings.ini"
    window = build_window(cfg, Preferences(str(path)))
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window, timeout=UI_MS)
    c = window.controller
    progress: list[float] = []
    c.compute_progressed.connect(progress.append)
    window.compute_gate.start()
    qtbot.waitUntil(lambda: any(0 < f < 1 for f in progress), timeout=TRACE_MS)
    assert c.computing
    window.close()
    assert not c.is_running()
    # the next start knows the run never finished, and waits
    again = _restored_window(qtbot, path, cfg, None)
    try:
        assert "did not finish" in again.status_view.message and again.controller.trace is None
    finally:
        again.close()


# a start as run_app makes it, up to the first paint and before the compute gate opens
FIRST_PAINT = r"""
import json, sys
from mha_explorer.qt.shell.app import application, build_window
from mha_explorer.qt.shell.settings import Preferences
app = application()
prefs = Preferences(sys.argv[1])
window = build_window(prefs.load_config(), prefs)
window.show()
app.processEvents()
print(json.dumps({"shown": window.isVisible(),
                  "loaded": sorted(m for m in ("numpy", "torch", "pyqtgraph") if m in sys.modules)}))
window.controller.shutdown()
"""


def test_the_window_is_on_screen_before_numpy_torch_or_pyqtgraph_load(tmp_path):
    """Each of them costs a noticeable part of a second on a small machine: the first paint
    must not wait for them (they load with the first computation, on the worker)."""
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path)
    out = subprocess.run([sys.executable, "-c", FIRST_PAINT, str(tmp_path / "settings.ini")],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report == {"shown": True, "loaded": []}


def test_the_command_line_reaches_the_window_without_numpy_torch_or_qt(tmp_path):
    """``mha-explorer`` imports every command's module to build its parser: none of them may
    bring numpy (60 ms) or worse before the early engine starts and the window is built."""
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    code = ("import json, sys, mha_explorer.cli; print(json.dumps(sorted(m for m in "
            "('numpy', 'torch', 'pyqtgraph', 'PySide6') if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=path), cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


# the window's first paint, then the event loop for a while: what was built, and when
BEHIND_TABS = r"""
import json, sys, time
from PySide6.QtCore import QEvent, QObject, QTimer
from mha_explorer.core.config import MHAConfig
from mha_explorer.qt.shell.app import application, build_window
from mha_explorer.qt.shell.main_window import BEHIND_TABS
MODULES = ("mha_explorer.qt.panels.parameters", "mha_explorer.qt.decode.generation_panel",
           "mha_explorer.qt.trained.layers_panel", "importlib.metadata", "psutil")
app = application()
window = build_window(MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu"))
report = {}

def state():
    return {"behind tabs, not built": sorted(set(BEHIND_TABS) & set(window.shell.waiting())),
            "loaded": sorted(m for m in MODULES if m in sys.modules),
            "models asked": window.controller.jobs.latest("models") > 0,
            "panels": sorted(window.docks[k].widget().objectName() for k in BEHIND_TABS)}

class FirstPaint(QObject):
    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Paint and "painted" not in report:
            report["painted"] = state()
        return False

spy = FirstPaint()
window.installEventFilter(spy)
window.show()
QTimer.singleShot(0, window.compute_gate.start)  # as run_app starts it
deadline = time.monotonic() + 60
while time.monotonic() < deadline and (set(BEHIND_TABS) & set(window.shell.waiting())
                                       or "painted" not in report
                                       or not window.status_view.memory_label.text()):
    app.processEvents()
report["after"] = state()
print(json.dumps(report))
window.controller.shutdown()
"""


def test_the_panels_behind_tabs_are_built_after_the_first_paint(tmp_path):
    """Parameters, Layers and Generation start behind other tabs: the first frame does not
    wait for them (nor for the install records the weights choice has read, on the jobs thread,
    nor for the free memory the status line shows), and they are ready moments after the first
    trace, without being asked for."""
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, "-c", BEHIND_TABS], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=path, HOME=str(tmp_path)), cwd=tmp_path,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["painted"]["behind tabs, not built"] == ["generation", "layers", "params"]
    assert report["painted"]["loaded"] == []
    assert report["after"]["behind tabs, not built"] == []
    assert report["after"]["panels"] == ["generation_panel", "layers_panel", "parameters_scroll"]
    assert not report["painted"]["models asked"]
    assert report["after"]["models asked"]  # the weights choice has asked its jobs thread to look
    assert "psutil" in report["after"]["loaded"]  # and the memory line has read the free memory


# a launch through run_app, as the command makes it: at the window's first paint, has the
# computation begun (its thread started, torch or the heads' modules imported)?
RUN_APP = r"""
import json, sys
from PySide6.QtCore import QEvent, QObject, QTimer
import mha_explorer.qt.shell.app as app_module
from mha_explorer.core.config import MHAConfig
from mha_explorer.qt.shell.settings import Preferences

report = {}
build_window = app_module.build_window

class Spy(QObject):
    def __init__(self, window):
        super().__init__(window)
        self.window = window
    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Paint and "at the first paint" not in report:
            report["at the first paint"] = {
                "computing": self.window.controller.is_running(),
                "loaded": sorted(m for m in ("torch", "numpy", "pyqtgraph") if m in sys.modules)}
        return False

def built(*args, **kwargs):
    window = build_window(*args, **kwargs)
    window.installEventFilter(Spy(window))
    def done(_trace):
        report["traced"] = True
        QTimer.singleShot(0, window.close)
    window.controller.trace_ready.connect(done)
    return window

app_module.build_window = built
code = app_module.run_app(MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu"),
                          Preferences(sys.argv[1]))
print(json.dumps(report))
"""


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="needs Xvfb: offscreen paints at show()")
def test_the_computation_begins_after_the_first_frame(tmp_path):
    """The compute thread (torch's import, or the early engine's answer and the heads'
    modules beside it) holds the interpreter lock for long stretches: started before the
    window's first frame, it held that frame up for a large part of a second on two cores.
    On a real X screen the frame waits for the server's answer to the mapping, so this runs
    on one (offscreen paints inside show(), before any timer could run)."""
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = {k: v for k, v in os.environ.items() if k != "QT_QPA_PLATFORM"}
    command = ["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", sys.executable, "-c", RUN_APP,
               str(tmp_path / "settings.ini")]
    out = subprocess.run(command, capture_output=True, text=True, env=dict(env, PYTHONPATH=path),
                         cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report == {"at the first paint": {"computing": False, "loaded": []}, "traced": True}
