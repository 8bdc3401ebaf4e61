"""Presentation mode: projector type everywhere, the advanced controls and the
arithmetic tucked away, keys still stepping; and back to exactly what was there."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication, QLabel
from waits import UI_MS

from mha_explorer.core.stages.catalog import STAGE_IDS
from mha_explorer.qt.shell.presentation import BODY_PT


def panel_type(window) -> dict[str, float]:
    """Point sizes of the text a class reads, panel by panel."""
    view, params = window.stage_view, window.params
    sizes = {name: getattr(view, name).font().pointSizeF()
             for name in ("counter", "title", "formula", "explanation", "costs")}
    sizes["code"] = view.code_panel.point_size()
    sizes["params"] = min(label.font().pointSizeF() for label in params.findChildren(QLabel))
    sizes["stepper"] = min(b.font().pointSizeF() for b in window.stepper.stage_buttons.values())
    sizes["heatmap caption"] = window.heatmaps.caption.font().pointSizeF()
    sizes["heatmap titles"] = min(c.title.font().pointSizeF() for c in window.heatmaps.cells)
    sizes["controls"] = window.controls.d_model_spin.font().pointSizeF()
    sizes["shapes"] = window.shapes.font().pointSizeF()
    return sizes


def advanced_widgets(controls):
    return [controls.dtype_combo, controls.device_combo, controls.seed_spin,
            controls.cross_check, controls.kv_seq_spin, controls.alignment_combo]


def basic_widgets(controls):
    return [controls.preset_combo, controls.d_model_spin, controls.heads_spin,
            controls.batch_spin, controls.seq_spin, controls.sentence_edit,
            controls.causal_check, controls.bias_check, *controls.kv_buttons.values()]


def test_presentation_enlarges_the_type_and_tucks_away_the_advanced_controls(qtbot, make_window):
    window = make_window()
    app = QApplication.instance()
    font_before = QFont(app.font())
    type_before = panel_type(window)
    docks_before = {key: dock.isVisible() for key, dock in window.docks.items()}
    size_before = window.size()
    assert all(w.isVisible() for w in advanced_widgets(window.controls))

    window.set_presentation(True)
    qtbot.waitUntil(lambda: window.isFullScreen(), timeout=UI_MS)
    assert window.presenting and window.actions["presentation"].isChecked()
    assert app.font().pointSizeF() >= BODY_PT >= 20
    for panel, points in panel_type(window).items():
        assert points >= 20, (panel, points)
    # stage first: the configuration waits for its key, the arithmetic and the code too
    assert not window.docks["controls"].isVisible()
    assert not window.docks["params"].isVisible() and not window.docks["shapes"].isVisible()
    assert window.docks["stages"].isVisible() and window.docks["heatmaps"].isVisible()
    assert not window.stage_view.code_panel.isVisible()
    window.actions["toggle_controls"].trigger()  # one key (Alt+2) shows the configuration
    assert window.docks["controls"].isVisible()
    assert not any(w.isVisible() for w in advanced_widgets(window.controls))
    assert all(w.isVisible() for w in basic_widgets(window.controls))
    assert window.menuBar().isHidden() and window.statusBar().isHidden()

    window.set_presentation(False)
    qtbot.waitUntil(lambda: not window.isFullScreen(), timeout=UI_MS)
    assert not window.presenting and not window.actions["presentation"].isChecked()
    assert app.font() == font_before
    assert panel_type(window) == type_before
    assert {key: dock.isVisible() for key, dock in window.docks.items()} == docks_before
    assert all(w.isVisible() for w in advanced_widgets(window.controls))
    assert not window.controls.labels_above
    assert not window.menuBar().isHidden() and not window.statusBar().isHidden()
    qtbot.waitUntil(lambda: window.size() == size_before, timeout=UI_MS)


@pytest.mark.parametrize("leave_key", [Qt.Key.Key_Escape, Qt.Key.Key_F11])
def test_keys_step_the_stages_in_presentation_and_esc_or_f11_leaves(qtbot, make_window, leave_key):
    window = make_window()
    c = window.controller
    qtbot.keyClick(window, Qt.Key.Key_F11)
    assert window.presenting
    steps = [(Qt.Key.Key_Right, 1), (Qt.Key.Key_PageDown, 2), (Qt.Key.Key_Left, 1),
             (Qt.Key.Key_PageUp, 0), (Qt.Key.Key_End, len(STAGE_IDS) - 1), (Qt.Key.Key_Home, 0)]
    for key, index in steps:
        qtbot.keyClick(window, key)
        assert c.stage_index == index, key
    qtbot.keyClick(window, Qt.Key.Key_Space)
    assert c.playing
    qtbot.keyClick(window, Qt.Key.Key_Space)
    assert not c.playing
    qtbot.keyClick(window, leave_key)
    assert not window.presenting


def test_esc_means_nothing_outside_presentation(qtbot, make_window):
    window = make_window()
    assert not window.actions["leave_presentation"].isEnabled()
    qtbot.keyClick(window, Qt.Key.Key_Escape)
    assert not window.presenting and not window.isFullScreen()


def test_closing_in_presentation_saves_the_everyday_layout_and_font(qtbot, make_window, tmp_path):
    window = make_window()
    font_before = QFont(QApplication.font())
    window.set_presentation(True)
    window.close()
    assert QApplication.font() == font_before
    assert window.prefs.load_layout()[1] is not None


def test_f11_then_a_theme_switch_then_esc_gives_the_normal_window_back(qtbot, make_window):
    window = make_window(size=(1100, 650))
    normal = window.geometry()
    qtbot.keyClick(window, Qt.Key.Key_F11)
    qtbot.waitUntil(window.isFullScreen, timeout=UI_MS)
    theme = window.theme
    qtbot.keyClick(window, Qt.Key.Key_T, Qt.KeyboardModifier.ControlModifier
                   | Qt.KeyboardModifier.ShiftModifier)
    assert window.theme is not theme
    qtbot.keyClick(window, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not window.isFullScreen(), timeout=UI_MS)
    assert not window.presenting
    qtbot.waitUntil(lambda: window.geometry() == normal, timeout=UI_MS)


def test_f11_twice_never_leaves_the_window_off_the_screen(qtbot, make_window):
    window = make_window(size=(1100, 650))
    normal = window.geometry()
    area = window.screen().availableGeometry()
    for _ in range(2):
        qtbot.keyClick(window, Qt.Key.Key_F11)
        qtbot.waitUntil(window.isFullScreen, timeout=UI_MS)
        assert window.geometry() == window.screen().geometry()
        qtbot.keyClick(window, Qt.Key.Key_F11)
        qtbot.waitUntil(lambda: not window.isFullScreen(), timeout=UI_MS)
        assert area.contains(window.geometry()) and window.geometry() == normal


def test_the_normal_window_can_shrink_to_1024_by_600(qtbot, make_window):
    window = make_window(size=(1024, 600))
    window.apply_default_layout()
    QApplication.processEvents()  # the layout's deferred steps run, as in the event loop
    for stage in STAGE_IDS:
        window.controller.set_stage(stage)
        hint = window.minimumSizeHint()
        assert hint.width() <= 1024 and hint.height() <= 600, (stage, hint)


def test_clicking_a_map_shows_that_head_in_the_diagram(qtbot, make_window):
    window = make_window()
    window.controller.set_stage("softmax")
    panel = window.heatmaps
    qtbot.waitUntil(lambda: len(panel.cells) == window.controller.config.H, timeout=UI_MS)
    qtbot.keyClick(panel.cells[2], Qt.Key.Key_Return)  # as a click on the map does
    assert window.controller.head == 2
    assert window.stage_view.head_spin.value() == 2
    assert "head 2 of 4" in window.stage_view.diagram.label_texts()
    if panel.dialog is not None:
        panel.dialog.close()
    window.stage_view.head_spin.setValue(3)
    assert window.controller.head == 3
    assert "head 3 of 4" in window.stage_view.diagram.label_texts()


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)])
def test_first_launch_shows_the_heads_as_reset_layout_does(qtbot, make_window, size):
    window = make_window(size=size)
    heads = window.docks["heatmaps"]
    qtbot.waitUntil(lambda: heads.isVisible() and not heads.visibleRegion().isEmpty(), timeout=UI_MS)
    first = (window.dockWidgetArea(heads), heads.height() > 200)
    window.apply_default_layout()
    qtbot.waitUntil(lambda: not heads.visibleRegion().isEmpty(), timeout=UI_MS)
    assert (window.dockWidgetArea(heads), heads.height() > 200) == first == (first[0], True)


def visible_inputs(window) -> list[str]:
    """The names of the configuration's inputs a person can see and reach."""
    from PySide6.QtWidgets import QAbstractButton, QAbstractSpinBox, QComboBox, QLineEdit

    dock = window.docks["controls"]
    kinds = (QAbstractSpinBox, QComboBox, QAbstractButton, QLineEdit)
    return sorted(w.objectName() or w.accessibleName() for kind in kinds
                  for w in dock.findChildren(kind) if w.isVisible())


@pytest.mark.parametrize("leave_key", [Qt.Key.Key_Escape, Qt.Key.Key_F11])
def test_f11_then_leaving_gives_back_every_configuration_input(qtbot, make_window, leave_key):
    window = make_window()
    before = visible_inputs(window)
    assert "variant_kind" in before and "variant_window" in before
    qtbot.keyClick(window, Qt.Key.Key_F11)
    qtbot.waitUntil(window.isFullScreen, timeout=UI_MS)
    qtbot.keyClick(window, leave_key)
    qtbot.waitUntil(lambda: not window.isFullScreen(), timeout=UI_MS)
    assert visible_inputs(window) == before
    window.actions["reset_layout"].trigger()
    assert visible_inputs(window) == before
