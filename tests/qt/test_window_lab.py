"""The head lab inside the window: a tiny run, saved and opened in the stage view, gives
the stage view a trace of that saved layer (weights "lab"), through the one edit path."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QScrollArea, QToolButton
from safetensors.numpy import load_file
from waits import UI_MS

from mha_explorer.core.config import MHAConfig

TRACE_TIMEOUT_MS = 120_000


@pytest.fixture
def window(make_window):
    return make_window(MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu"), size=(1600, 900))


def test_ctrl_l_opens_the_lab_in_its_own_window_over_most_of_the_screen(qtbot, window):
    assert window.lab.page is None  # nothing of the lab loads until asked for
    qtbot.keyClick(window, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    dock = window.docks["lab"]
    assert window.lab.page is not None and dock.isFloating() and dock.isVisible()
    screen = dock.screen().availableGeometry()
    assert screen.contains(dock.frameGeometry())
    assert dock.width() * dock.height() >= 0.8 * screen.width() * screen.height()
    # the page fits its window: its plots never scroll sideways
    area = dock.findChild(QScrollArea, "lab_scroll")
    qtbot.waitUntil(lambda: area.widget().width() <= area.viewport().width(), timeout=UI_MS)
    assert not area.horizontalScrollBar().isVisible()
    assert window.stage_view.isVisible()  # the stage view stays in the main window
    # a window of its own: the window manager's title bar, not a frameless tool window
    flags = dock.windowFlags()
    assert flags & Qt.WindowType.WindowType_Mask == Qt.WindowType.Window
    assert not flags & Qt.WindowType.FramelessWindowHint
    assert dock.windowTitle() == "Head lab — MHA Explorer"
    # its bar's one button docks it back as a tab among the tables, with a dock's title bar
    dock.findChild(QToolButton, "lab_dock_button").click()
    assert not dock.isFloating() and dock.titleBarWidget() is None
    assert window.docks["shapes"] in window.tabifiedDockWidgets(dock)
    qtbot.keyClick(window, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)  # and out again
    assert dock.isFloating() and dock.windowFlags() & Qt.WindowType.WindowType_Mask == Qt.WindowType.Window
    window.apply_default_layout()  # a layout reset docks it too, never keeping the button
    assert not dock.isFloating() and dock.titleBarWidget() is None


@pytest.mark.slow
def test_a_tiny_lab_run_opens_in_the_stage_view_with_its_saved_weights(qtbot, window, tmp_path,
                                                                         monkeypatch):
    window.lab.show()
    page = window.lab.page
    qtbot.waitUntil(lambda: page.ready, timeout=TRACE_TIMEOUT_MS)
    page.d_model.setValue(8)
    page.steps.setValue(15)
    page.heads.setValue(2)
    page.analyse.setChecked(False)
    page.train_button.click()
    qtbot.waitUntil(lambda: not page.running and page.shown_run.count() == 1, timeout=TRACE_TIMEOUT_MS)

    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *_a, **_k: str(tmp_path))
    c = window.controller

    def lab_trace_arrived() -> bool:
        trace = c.current_trace
        return trace is not None and trace.config.weights == "lab"

    page.stage_button.click()
    qtbot.waitUntil(lab_trace_arrived, timeout=TRACE_TIMEOUT_MS)
    cfg = c.config
    assert (cfg.weights, cfg.layer, cfg.d_model, cfg.H) == ("lab", 1, 8, 2)
    assert c.stage == c.plan.stage_ids[0]
    run_folder = tmp_path / f"lab-{page.task.currentText()}-h2"
    assert cfg.weights_path == str(run_folder)
    saved = load_file(str(run_folder / "model.safetensors"))  # the file, read on its own
    trace = c.current_trace
    for name in "QKVO":
        np.testing.assert_array_equal(trace.weights[f"W_{name}"], saved[f"attn.0.{name.lower()}.weight"])
    # the heads come back in front of the lab (a tab behind is moved off screen, not hidden)
    qtbot.waitUntil(lambda: not window.docks["heatmaps"].visibleRegion().isEmpty(), timeout=UI_MS)
    assert window.docks["lab"].visibleRegion().isEmpty()
    # the Weights control names the source in use, and choosing random leaves the lab model
    weights = window.weights_panel
    assert weights.combo.currentData() == "lab" and weights.combo.currentText() == "a Lab run"
    assert "Lab" in weights.note.text()
    weights.combo.setCurrentIndex(weights.combo.findData("random"))
    qtbot.waitUntil(lambda: c.current_trace is not None and c.current_trace.config.weights == "random",
                    timeout=TRACE_TIMEOUT_MS)
    assert c.config.weights == "random" and c.config.weights_path is None
    assert weights.combo.currentText() == "random (untrained)"
