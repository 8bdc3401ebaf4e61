"""The configuration dock, driven like a person: typing, clicking, picking presets.

What is asserted is what a person sees: spin box values, the inline message and
its buttons, the shapes table's cells and the parameter panel's numbers.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QComboBox,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)
from waits import UI_MS

from mha_explorer.core.config.presets import PRESETS
from mha_explorer.core.variants.grouped import gqa_default
from mha_explorer.qt.panels.config_fields import suggestion_text
from mha_explorer.qt.panels.configuration import ControlsPanel
from mha_explorer.qt.panels.parameters import ParamsPanel
from mha_explorer.qt.panels.shapes import ShapesTable


@pytest.fixture
def ui(qtbot, controller):
    """The controls beside the two views they drive, shown as in the window."""
    host = QWidget()
    layout = QHBoxLayout(host)
    controls = ControlsPanel(controller)
    table, params = ShapesTable(controller), ParamsPanel(controller)
    for widget in (controls, table, params):
        layout.addWidget(widget)
    qtbot.addWidget(host)
    host.resize(1400, 900)
    host.show()
    qtbot.waitExposed(host, timeout=UI_MS)
    return SimpleNamespace(host=host, controls=controls, table=table, params=params,
                           ctrl=controller)


def type_into(qtbot, spin: QSpinBox, text: str) -> None:
    """Select what is there and type over it, key by key."""
    qtbot.keyClick(spin, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClicks(spin, text)


def shape(ui, stage: str, tensor: str) -> str:
    return ui.table.cell_text(stage, tensor, "Shape")


def test_typing_d_model_and_heads_changes_the_shapes(qtbot, ui):
    assert shape(ui, "view", "Q") == "2 × 6 × 4 × 16"

    type_into(qtbot, ui.controls.d_model_spin, "128")
    assert ui.ctrl.config.d_model == 128
    assert shape(ui, "view", "Q") == "2 × 6 × 4 × 32"
    assert ui.controls.d_k_label.text() == "d_k = 32"

    type_into(qtbot, ui.controls.heads_spin, "8")
    assert shape(ui, "view", "Q") == "2 × 6 × 8 × 16"
    assert shape(ui, "scores", "scores") == "2 × 8 × 6 × 6"

    type_into(qtbot, ui.controls.batch_spin, "3")
    assert shape(ui, "input", "X") == "3 × 6 × 128"

    # "409" on the way to 4096 is invalid for 8 heads; the finished number is not
    type_into(qtbot, ui.controls.d_model_spin, "4096")
    assert ui.ctrl.config.d_model == 4096 and ui.controls.suggestion_buttons() == []
    assert shape(ui, "view", "Q") == "3 × 6 × 8 × 512"


def test_invalid_heads_are_explained_beside_heads_and_one_click_fixes_them(qtbot, ui):
    type_into(qtbot, ui.controls.heads_spin, "5")

    label = ui.controls.error_label("n_heads")
    assert label.isVisible()
    assert ui.controls.field_box("n_heads").isAncestorOf(label)  # beside the heads control
    assert "not divisible by 5 heads" in label.text()
    buttons = {b.text(): b for b in ui.controls.suggestion_buttons()}
    assert set(buttons) == {"4 heads", "8 heads", "d_model 60", "d_model 65"}
    assert all(b.isVisible() and b.accessibleName() for b in buttons.values())
    # the rest of the window keeps the last valid state
    assert ui.ctrl.config.n_heads == 4
    assert shape(ui, "view", "Q") == "2 × 6 × 4 × 16"

    button = ui.controls.findChild(QPushButton, "suggestion_n_heads_8")
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)

    assert ui.ctrl.error is None and ui.ctrl.config.n_heads == 8
    assert not label.isVisible()
    assert ui.controls.suggestion_buttons() == []
    assert ui.controls.heads_spin.value() == 8
    assert shape(ui, "view", "Q") == "2 × 6 × 8 × 8"


def test_invalid_d_model_is_explained_where_it_was_typed(qtbot, ui):
    type_into(qtbot, ui.controls.d_model_spin, "90")

    label = ui.controls.error_label("d_model")
    assert label.isVisible() and "d_model 90 is not divisible by 4 heads" in label.text()
    assert not ui.controls.error_label("n_heads").isVisible()
    assert ui.controls.d_k_label.text() == "d_k: not whole"

    qtbot.mouseClick(ui.controls.findChild(QPushButton, "suggestion_d_model_92"),
                     Qt.MouseButton.LeftButton)
    assert ui.ctrl.config.d_model == 92 and ui.controls.d_model_spin.value() == 92
    assert not label.isVisible()
    assert shape(ui, "view", "Q") == "2 × 6 × 4 × 23"


def test_two_invalid_halves_make_a_valid_pair(qtbot, ui):
    type_into(qtbot, ui.controls.heads_spin, "6")  # 64 / 6: invalid on its own
    assert ui.ctrl.config.n_heads == 4
    type_into(qtbot, ui.controls.d_model_spin, "96")  # judged together with the 6 heads
    assert (ui.ctrl.config.d_model, ui.ctrl.config.n_heads) == (96, 6)
    assert ui.controls.suggestion_buttons() == []
    assert shape(ui, "view", "Q") == "2 × 6 × 6 × 16"


def test_gqa_narrows_k_and_v_and_the_params_show_the_saving(qtbot, ui, settle):
    type_into(qtbot, ui.controls.heads_spin, "8")
    settle(ui.ctrl)
    assert not ui.controls.kv_spin.isEnabled()
    assert not ui.params.saving_label.isVisible()

    qtbot.mouseClick(ui.controls.kv_buttons["GQA"], Qt.MouseButton.LeftButton)
    assert ui.controls.kv_spin.isEnabled()
    assert ui.ctrl.config.n_kv_heads == 2  # a valid default: about H / 4
    type_into(qtbot, ui.controls.kv_spin, "4")

    assert ui.ctrl.config.variant == "GQA" and ui.ctrl.config.Hkv == 4
    assert shape(ui, "project", "K") == "2 × 6 × 32"
    assert shape(ui, "view", "K") == "2 × 6 × 4 × 8"
    assert shape(ui, "view", "Q") == "2 × 6 × 8 × 8"
    assert ui.controls.kv_note.text() == "2 query heads share each of the 4 K/V heads"
    settle(ui.ctrl)
    # W_K and W_V shrink from 64×64 to 64×32, b_K and b_V from 64 to 32
    assert ui.params.saving_label.isVisible()
    assert ui.params.saving_label.text() == "4,160"
    assert "25.0% fewer parameters" in ui.params.saving_note.text()
    assert ui.params.mha_label.text() == "16,640"
    assert ui.params.total_label.text() == "12,480"

    qtbot.mouseClick(ui.controls.kv_buttons["MQA"], Qt.MouseButton.LeftButton)
    assert ui.ctrl.config.n_kv_heads == 1
    assert not ui.controls.kv_spin.isEnabled()
    assert shape(ui, "project", "K") == "2 × 6 × 8"

    qtbot.mouseClick(ui.controls.kv_buttons["MHA"], Qt.MouseButton.LeftButton)
    assert ui.ctrl.config.n_kv_heads is None
    settle(ui.ctrl)
    assert not ui.params.saving_label.isVisible()


def test_gqa_that_cannot_share_evenly_offers_the_counts_that_can(qtbot, ui):
    type_into(qtbot, ui.controls.heads_spin, "8")
    qtbot.mouseClick(ui.controls.kv_buttons["GQA"], Qt.MouseButton.LeftButton)
    type_into(qtbot, ui.controls.kv_spin, "3")

    label = ui.controls.error_label("n_kv_heads")
    assert label.isVisible() and "cannot be shared evenly by 3" in label.text()
    qtbot.mouseClick(ui.controls.findChild(QPushButton, "suggestion_n_kv_heads_4"),
                     Qt.MouseButton.LeftButton)
    assert ui.ctrl.config.Hkv == 4 and ui.controls.kv_spin.value() == 4
    assert not label.isVisible()


def pick_preset(qtbot, combo: QComboBox, name: str) -> None:
    """Open-and-click in a person's hands; here the keyboard way: type the name."""
    qtbot.keyClicks(combo, name)
    assert combo.currentText() == name


def test_a_preset_updates_every_control_and_the_total(qtbot, ui, settle):
    pick_preset(qtbot, ui.controls.preset_combo, "GPT-2 small")
    settle(ui.ctrl)

    c = ui.controls
    assert (c.d_model_spin.value(), c.heads_spin.value()) == (768, 12)
    assert c.kv_buttons["MHA"].isChecked() and not c.kv_spin.isEnabled()
    assert c.bias_check.isChecked() and c.causal_check.isChecked()
    assert c.batch_spin.value() == 2 and c.seq_spin.value() == 6  # the input is kept
    assert ui.params.total_label.text() == f"{4 * 768 * 768 + 4 * 768:,}"  # 2,362,368
    assert ui.params.one_head_note.text().startswith("the same")
    assert shape(ui, "view", "Q") == "2 × 6 × 12 × 64"


def test_a_gqa_preset_selects_gqa_with_its_count(qtbot, ui, settle):
    pick_preset(qtbot, ui.controls.preset_combo, "LLaMA-3 8B (GQA)")
    settle(ui.ctrl)

    c = ui.controls
    assert c.kv_buttons["GQA"].isChecked() and c.kv_spin.isEnabled() and c.kv_spin.value() == 8
    assert not c.bias_check.isChecked()
    preset = PRESETS["llama3-8b"]
    assert ui.params.total_label.text() == f"{2 * 4096 * 4096 + 2 * 4096 * 1024:,}"
    assert ui.params.mha_label.text() == f"{4 * 4096 * 4096:,}"
    assert shape(ui, "project", "K") == f"2 × 6 × {preset.n_kv_heads * 128:,}"

    type_into(qtbot, c.seed_spin, "7")  # an input edit keeps the architecture
    assert c.preset_combo.currentText() == "LLaMA-3 8B (GQA)"
    qtbot.mouseClick(c.bias_check, Qt.MouseButton.LeftButton)
    assert c.preset_combo.currentText() == "Custom"


def test_a_sentence_becomes_the_tokens_and_clearing_it_returns_to_positions(qtbot, ui):
    qtbot.keyClicks(ui.controls.sentence_edit, "the cat sat")
    assert ui.ctrl.config.tokens == ("the", "cat", "sat")
    assert ui.controls.seq_spin.value() == 3
    assert shape(ui, "input", "X") == "2 × 3 × 64"

    ui.controls.sentence_edit.selectAll()
    qtbot.keyClick(ui.controls.sentence_edit, Qt.Key.Key_Backspace)
    assert ui.ctrl.config.tokens is None and ui.ctrl.config.seq == 3

    qtbot.keyClicks(ui.controls.sentence_edit, "a b")
    type_into(qtbot, ui.controls.seq_spin, "5")  # a typed length drops the sentence
    assert ui.ctrl.config.tokens is None and ui.controls.sentence_edit.text() == ""


def test_cross_attention_adds_a_key_length_and_the_alignment_choice(qtbot, ui):
    c = ui.controls
    assert not c.kv_seq_spin.isEnabled() and not c.alignment_combo.isEnabled()
    rows_before = ui.table.model().rowCount()

    qtbot.mouseClick(c.cross_check, Qt.MouseButton.LeftButton)
    assert c.kv_seq_spin.isEnabled()
    type_into(qtbot, c.kv_seq_spin, "10")
    assert ui.ctrl.config.S == 10
    assert shape(ui, "scores", "scores") == "2 × 4 × 6 × 10"
    assert ui.table.model().rowCount() == rows_before + 1  # X_kv appears

    qtbot.mouseClick(c.causal_check, Qt.MouseButton.LeftButton)
    assert c.alignment_combo.isEnabled()  # causal with T ≠ S: the corner matters

    qtbot.mouseClick(c.cross_check, Qt.MouseButton.LeftButton)
    assert ui.ctrl.config.kv_seq is None
    assert shape(ui, "scores", "scores") == "2 × 4 × 6 × 6"


def test_dtype_changes_the_memory_not_the_shapes(qtbot, ui):
    before = ui.table.cell_text("input", "X", "New memory")
    ui.controls.dtype_combo.setCurrentText("float16")  # as picked from the list
    assert ui.ctrl.config.dtype == "float16"
    assert ui.table.cell_text("input", "X", "New memory") != before
    assert shape(ui, "input", "X") == "2 × 6 × 64"


def test_config_changes_made_elsewhere_are_reflected(qtbot, ui):
    ui.ctrl.update(d_model=96, n_heads=3, batch=4)
    c = ui.controls
    assert (c.d_model_spin.value(), c.heads_spin.value(), c.batch_spin.value()) == (96, 3, 4)


def test_every_control_is_named_and_explained(ui):
    kinds = (QAbstractButton, QComboBox, QLineEdit, QSpinBox)
    controls = [w for kind in kinds for w in ui.controls.findChildren(kind)
                if not w.objectName().startswith("qt_")]  # Qt's own inner buttons
    assert len(controls) >= 15
    for widget in controls:
        if isinstance(widget, QLineEdit) and isinstance(widget.parent(), QSpinBox):
            continue  # a spin box's inner editor: the spin box carries the name
        assert widget.accessibleName(), widget
        assert widget.toolTip(), widget


def test_suggestion_texts_read_like_speech():
    assert suggestion_text({"n_heads": 1}) == "1 head"
    assert suggestion_text({"n_heads": 8}) == "8 heads"
    assert suggestion_text({"d_model": 4096}) == "d_model 4,096"
    assert suggestion_text({"n_kv_heads": 2}) == "2 K/V heads"
    assert suggestion_text({"seq": 5}) == "sequence length 5"


def test_gqa_default_keeps_a_valid_count_or_picks_about_a_quarter():
    assert gqa_default(32, 4) == 4
    assert gqa_default(32, 32) == 8
    assert gqa_default(8, 8) == 2
    assert gqa_default(71, 71) == 2  # prime: no count fits, validation will say so


def test_space_ticks_a_focused_check_box_rather_than_playing(qtbot, ui):
    # the main window binds Space to play/pause; a focused control keeps it
    play = QAction("play", ui.host)
    play.setShortcut(QKeySequence(Qt.Key.Key_Space))
    play.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    ui.host.addAction(play)
    triggered = []
    play.triggered.connect(lambda: triggered.append(True))
    ui.host.activateWindow()
    qtbot.waitUntil(ui.host.isActiveWindow, timeout=UI_MS)

    ui.controls.bias_check.setFocus()
    qtbot.waitUntil(ui.controls.bias_check.hasFocus, timeout=UI_MS)
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Space)
    assert ui.ctrl.config.bias is False and triggered == []
