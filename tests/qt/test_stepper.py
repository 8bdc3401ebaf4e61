"""The stage timeline: clicking stages, stepping, playing, and the table following."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton, QVBoxLayout, QWidget
from waits import UI_MS

from mha_explorer.core.stages.catalog import STAGE_IDS
from mha_explorer.qt.controller import SPEEDS
from mha_explorer.qt.panels.shapes import ShapesTable
from mha_explorer.qt.panels.stages import StageStepper


@pytest.fixture
def ui(qtbot, controller):
    host = QWidget()
    layout = QVBoxLayout(host)
    stepper, table = StageStepper(controller), ShapesTable(controller)
    layout.addWidget(stepper)
    layout.addWidget(table)
    qtbot.addWidget(host)
    host.resize(1400, 700)
    host.show()
    qtbot.waitExposed(host, timeout=UI_MS)
    return SimpleNamespace(host=host, stepper=stepper, table=table, ctrl=controller)


def click(qtbot, button: QAbstractButton) -> None:
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def highlighted_tensors(table: ShapesTable) -> list[str]:
    model = table.model()
    return [model.index(r, 1).data() for r in table.highlighted_rows()]


def test_the_timeline_shows_nine_stages_with_the_first_current(ui):
    buttons = ui.stepper.stage_buttons
    assert list(buttons) == list(STAGE_IDS)
    assert [b.text() for b in buttons.values()] == [
        "1 input", "2 project", "3 view", "4 transpose", "5 QKᵀ", "6 softmax", "7 A·V",
        "8 merge", "9 W_O"]
    assert buttons["input"].isChecked() and buttons["input"].property("phase") == "current"
    assert "Input tokens" in buttons["input"].toolTip()
    assert not ui.stepper.prev_button.isEnabled()


def test_clicking_a_stage_sets_it_and_the_table_highlight_follows(qtbot, ui):
    with qtbot.waitSignal(ui.ctrl.stage_changed, timeout=UI_MS) as signal:
        click(qtbot, ui.stepper.stage_buttons["softmax"])
    assert signal.args == ["softmax"]
    assert ui.ctrl.stage == "softmax"
    assert ui.stepper.stage_buttons["softmax"].property("phase") == "current"
    assert ui.stepper.stage_buttons["scores"].property("phase") == "past"
    assert ui.stepper.stage_buttons["merge"].property("phase") == "future"
    assert highlighted_tensors(ui.table) == ["weights"]

    click(qtbot, ui.stepper.stage_buttons["view"])
    assert highlighted_tensors(ui.table) == ["Q", "K", "V"]
    assert ui.table.cell_text("view", "Q", "Stage") == "3 view"


def test_next_and_back_step_one_stage(qtbot, ui):
    click(qtbot, ui.stepper.next_button)
    click(qtbot, ui.stepper.next_button)
    assert ui.ctrl.stage == "view"
    click(qtbot, ui.stepper.prev_button)
    assert ui.ctrl.stage == "project"
    assert highlighted_tensors(ui.table) == ["Q", "K", "V"]


def test_stage_changes_from_elsewhere_are_reflected(ui):
    ui.ctrl.last_stage()  # as the End key does
    assert ui.stepper.stage_buttons["output"].isChecked()
    assert not ui.stepper.next_button.isEnabled()
    assert highlighted_tensors(ui.table) == ["Y"]


def test_play_advances_on_its_own_and_pause_stops_it(qtbot, ui):
    ui.stepper.speed_combo.setCurrentIndex(ui.stepper.speed_combo.findText("3×"))  # as picked
    assert ui.ctrl.speed == 3.0

    with qtbot.waitSignal(ui.ctrl.playing_changed, timeout=UI_MS):
        click(qtbot, ui.stepper.play_button)
    assert ui.stepper.play_button.text() == "Pause"
    with qtbot.waitSignal(ui.ctrl.stage_changed, timeout=UI_MS) as signal:
        pass
    assert signal.args == ["project"]
    assert highlighted_tensors(ui.table) == ["Q", "K", "V"]

    click(qtbot, ui.stepper.play_button)
    assert not ui.ctrl.playing
    assert ui.stepper.play_button.text() == "Play"
    stopped_at = ui.ctrl.stage
    with qtbot.assertNotEmitted(ui.ctrl.stage_changed, wait=ui.ctrl.step_interval_ms + 200):
        pass
    assert ui.ctrl.stage == stopped_at


def test_speed_changes_from_elsewhere_are_reflected(ui):
    ui.ctrl.set_speed(2.0)
    assert ui.stepper.speed_combo.currentText() == "2×"
    assert [ui.stepper.speed_combo.itemData(i) for i in range(ui.stepper.speed_combo.count())] \
        == list(SPEEDS)


def test_no_stepper_button_takes_focus_from_the_window_shortcuts(ui):
    buttons = ui.stepper.findChildren(QAbstractButton)
    assert len(buttons) == 12
    for button in buttons:
        assert button.focusPolicy() == Qt.FocusPolicy.NoFocus, button.objectName()
        assert button.accessibleName() and button.toolTip(), button.objectName()
    # the speed is reachable with Tab but a click leaves Space to the window
    assert ui.stepper.speed_combo.focusPolicy() == Qt.FocusPolicy.TabFocus
