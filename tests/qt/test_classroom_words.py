"""The words a class reads: the sentence, the √d_k numbers, an honest note about
random weights, and the small wordings that read wrong on a projector."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel
from waits import TRACE_MS, UI_MS

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.models.patterns import row_entropy_bits
from mha_explorer.qt.controller import BASE_STEP_MS

WORDS = ("the", "cat", "sat", "<h1>BIG</h1>")


def test_the_input_stage_shows_the_sentence_as_plain_words(qtbot, make_window):
    window = make_window(MHAConfig(d_model=64, n_heads=4, batch=1, seq=4, tokens=WORDS, device="cpu"))
    view = window.stage_view
    window.controller.set_stage("input")
    assert view.sentence.isVisible() and "<h1>BIG</h1>" in view.sentence.text()
    assert view.sentence.textFormat() == Qt.TextFormat.PlainText  # a word, not a heading
    window.controller.set_stage("softmax")
    panel = window.heatmaps
    qtbot.waitUntil(lambda: bool(panel.cells), timeout=UI_MS)
    assert panel.hover_text(0, 3, 3).count("<h1>BIG</h1>") >= 1
    assert panel.hover_label.textFormat() == Qt.TextFormat.PlainText
    assert not view.sentence.isVisible()


def test_scores_and_softmax_show_the_scaling_in_this_configs_numbers(qtbot, make_window):
    window = make_window(MHAConfig(d_model=64, n_heads=4, batch=1, seq=6, device="cpu"))
    view = window.stage_view
    for stage in ("scores", "softmax"):
        window.controller.set_stage(stage)
        # worked out on the jobs' thread: here a moment after the trace
        qtbot.waitUntil(lambda: "÷√16" in view.scaling.text(), timeout=TRACE_MS)
        text = view.scaling.text()
        assert view.scaling.isVisible() and "÷√16" in text and "entropy" in text, stage
    window.controller.set_stage("merge")
    assert not view.scaling.isVisible()


def test_random_weights_say_the_maps_are_untrained(qtbot, make_window):
    window = make_window()
    note = window.heatmaps.weights_note
    assert note.isVisible() and "untrained" in note.text()


def test_one_head_has_no_head_count_line_to_overprint_its_caption(qtbot, make_window):
    window = make_window(MHAConfig(d_model=16, n_heads=1, batch=1, seq=4, device="cpu"))
    window.controller.set_stage("softmax")
    texts = window.stage_view.diagram.label_texts()
    assert not any("of 1" in t for t in texts)
    assert not window.stage_view.head_spin.isVisible()


def test_the_merge_words_stay_on_the_canvas_with_128_heads(qtbot, make_window):
    window = make_window(MHAConfig(d_model=1024, n_heads=128, batch=1, seq=4, device="cpu"))
    window.controller.set_stage("merge")
    diagram = window.stage_view.diagram
    arrow = diagram.items_by_key()["merge.arrow"]
    assert diagram.sceneRect().contains(arrow.sceneBoundingRect())
    assert arrow.text().endswith("a real copy")


def test_wordings_read_right(qtbot, make_window, settle):
    window = make_window(MHAConfig(d_model=64, n_heads=8, n_kv_heads=1, batch=1, seq=4, device="cpu"))
    assert window.controls.kv_note.text() == "all 8 query heads share one K/V head"
    window.controller.update(n_kv_heads=None, n_heads=1)
    settle(window.controller)
    assert "1 head of" in window.params.one_head_note.text()
    assert "1 heads" not in window.params.one_head_note.text()
    one_hot = np.eye(4, dtype=np.float32)
    assert f"{row_entropy_bits(one_hot, np.ones(4, bool)):.2f}" == "0.00"


def test_a_typed_zero_and_an_invalid_state_explain_what_was_typed(qtbot, make_window):
    window = make_window()
    controls = window.controls
    controls.preset_combo.setCurrentIndex(controls.preset_combo.findData("gpt2"))
    assert controls.preset_combo.currentData() == "gpt2"
    controls.heads_spin.setValue(7)  # 768 is not divisible by 7
    assert controls.preset_combo.currentData() is None  # no longer GPT-2
    assert controls.kv_note.text() == "" and "not whole" in controls.d_k_label.text()
    controls.heads_spin.setValue(12)
    controls.d_model_spin.lineEdit().selectAll()
    qtbot.keyClicks(controls.d_model_spin, "0")
    label = controls.error_label("d_model")
    assert label.isVisible() and "d_model" in label.text().lower().replace("d model", "d_model")


def test_the_sentence_box_explains_a_length_that_replaces_it_and_its_limit(qtbot, make_window):
    window = make_window()
    controls = window.controls
    controls.sentence_edit.setText("the cat sat")
    assert window.controller.config.T == 3
    controls.seq_spin.setValue(5)
    note = controls.sentence_note
    assert note.isVisible() and "T = 5" in note.text() and "3-word" in note.text()
    controls.sentence_edit.setText("ab " * 20_000)  # more than the box takes
    assert note.isVisible() and "32,767" in note.text()
    width = controls.sentence_edit.width()
    assert width >= controls.sentence_edit.fontMetrics().horizontalAdvance("the cat sat on the mat")


def test_play_at_1x_steps_about_every_second(qtbot, controller):
    controller.set_speed(1.0)
    assert controller.step_interval_ms == BASE_STEP_MS == 1000
    controller.set_speed(2.0)
    assert controller.step_interval_ms == 500
    assert controller._play.timerType() == Qt.TimerType.PreciseTimer
    controller.play()
    with qtbot.waitSignal(controller.stage_changed, timeout=1500):
        pass
    controller.pause()


def test_the_export_dialog_names_its_folder_without_an_ampersand(qtbot, make_window, tmp_path):
    from mha_explorer.qt.shell.export_dialog import ExportDialog

    dialog = ExportDialog(tmp_path, make_window())
    labels = [w for w in dialog.findChildren(QLabel) if "Folder" in w.text()]
    assert labels and all(w.buddy() is not None for w in labels)
    dialog.deleteLater()
