"""Fixtures for driving the Qt part offscreen: a started controller that is
always shut down, and a check that no compute thread outlives its test."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from teardown import gone
from waits import TRACE_MS, UI_MS, wait_until

from mha_explorer.core.config import MHAConfig
from mha_explorer.qt.controller import Controller

SCREEN = (1920, 1080)  # the offscreen screen: a projector, not the plugin's 800×800


def _projector_screen() -> None:
    """The offscreen platform takes its screens from a JSON file: one of SCREEN, so
    a window sized for a laptop or a projector fits its screen as it would on a desk."""
    if os.environ.get("QT_QPA_PLATFORM") != "offscreen":
        return
    folder = Path(tempfile.mkdtemp(prefix="mha-explorer-screen-"))
    config = folder / "screens.json"
    config.write_text(json.dumps({
        "synchronousWindowSystemEvents": True, "windowFrameMargins": False,
        "screens": [{"name": "projector", "x": 0, "y": 0, "width": SCREEN[0], "height": SCREEN[1],
                     "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={config}"


_projector_screen()


@pytest.fixture
def make_controller(qtbot):
    made: list[Controller] = []

    def make(config: MHAConfig | None = None, *, wait: bool = True, **kwargs) -> Controller:
        ctrl = Controller(config or MHAConfig(d_model=64, n_heads=4, batch=2, seq=6), **kwargs)
        made.append(ctrl)
        if wait:
            with qtbot.waitSignal(ctrl.trace_ready, timeout=TRACE_MS):
                ctrl.start()
        else:
            ctrl.start()
        return ctrl

    yield make
    for ctrl in made:
        ctrl.shutdown()
        # a piece that cannot hear Cancel (importing the engine) is let go, not waited for:
        # it must still end on its own, so no thread outlives the test
        ctrl.jobs.thread.wait(TRACE_MS)
        assert not ctrl.is_running(), "the compute thread outlived the test"


@pytest.fixture
def settle(qtbot):
    """Wait until the views have caught up with the last edit or trace: they react in
    event-loop turns of their own (qt/staggered.py), a moment after the edit."""
    def wait(controller: Controller, timeout: int = UI_MS) -> None:
        qtbot.waitUntil(lambda: controller.later.idle, timeout=timeout)
    return wait


@pytest.fixture
def controller(make_controller):
    return make_controller()


@pytest.fixture
def make_window(qtbot, tmp_path):
    """The real main window on a small config, with preferences in tmp_path; closed
    at the end, which stops its thread and gives the application its look back."""
    from mha_explorer.qt.shell.app import build_window
    from mha_explorer.qt.shell.settings import Preferences

    made = []

    def make(config: MHAConfig | None = None, *, size=(1280, 720), settings=None, wait=True):
        prefs = Preferences(str(settings or tmp_path / "settings.ini"))
        window = build_window(config or MHAConfig(d_model=64, n_heads=4, batch=2, seq=6,
                                                  device="cpu"), prefs)
        made.append(window)
        qtbot.addWidget(window)
        window.resize(*size)
        window.show()
        qtbot.waitExposed(window, timeout=UI_MS)
        if wait:
            with qtbot.waitSignal(window.controller.trace_ready, timeout=TRACE_MS):
                window.controller.start()
        return window

    yield make
    for window in made:
        window.close()
        window.controller.jobs.thread.wait(TRACE_MS)  # as above: let go, ending alone
        assert not window.controller.is_running(), "the compute thread outlived the test"


@pytest.fixture(scope="module")
def shared_window(qapp, tmp_path_factory):
    """One main window for the tests of a module that only look at it: make_window's small
    config at 1280×720, its first trace computed, preferences in a temporary folder, closed
    after the module's last test. A test may read it, step its stages, open and close a
    dialog; one that edits the config, resizes it, presents, switches the theme or closes it
    builds its own with make_window (each window costs about 0.3 s of CPU to build)."""
    from mha_explorer.qt.shell.app import build_window
    from mha_explorer.qt.shell.settings import Preferences

    prefs = Preferences(str(tmp_path_factory.mktemp("shared-window") / "settings.ini"))
    window = build_window(MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu"), prefs)
    window.resize(1280, 720)
    window.show()
    wait_until(lambda: window.windowHandle() is not None and window.windowHandle().isExposed(),
               timeout=UI_MS, what="the window on screen")
    traced: list[object] = []
    window.controller.trace_ready.connect(traced.append)
    window.controller.start()
    wait_until(lambda: bool(traced), timeout=TRACE_MS, what="the first trace")
    yield window
    gone(window)
    window.controller.jobs.thread.wait(TRACE_MS)
    assert not window.controller.is_running(), "the compute thread outlived the module"
