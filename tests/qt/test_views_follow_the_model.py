"""After a switch of weights every view shows what a window opened on the new config shows: no
view keeps the older model's text, scores, columns, layer count or notes.

One window goes Gemma 3 → MiniLM-L6 → random weights, as a person chooses them (having let
Gemma write and look for its induction heads on the way); after each choice every dock and the
stage's header are read as a person reads them (the words, fields, choices, buttons and tables
in sight, the painted views' own summaries) and compared, dock by dock, with a fresh window
opened on the same config with the same tabs in front."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QComboBox,
    QLabel,
    QLineEdit,
    QProgressBar,
    QTabWidget,
    QWidget,
)

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.presets import get_preset
from mha_explorer.core.config.rules import trained_fields
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import MODELS, model_named
from mha_explorer.qt.controller import Controller
from mha_explorer.qt.jobs import JobKind
from mha_explorer.qt.shell.layouts import bring_to_front

WAIT_MS = 240_000
MODEL_KEYS = ("gemma3-270m", "minilm-l6")
both_models = pytest.mark.skipif(not all(runtime.is_available(MODELS[k])[0] for k in MODEL_KEYS),
                                 reason="needs both trained models' packages")
DOCKS = ("controls", "weights", "shapes", "params", "heatmaps", "layers", "generation")


def _cell_texts(view: QAbstractItemView) -> tuple:
    model = view.model()
    heads = tuple(model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount()))
    return heads, tuple(tuple(model.index(r, c).data() for c in range(model.columnCount()))
                        for r in range(model.rowCount()))


def _shown(root: QWidget) -> list:
    """What a person reads in ``root``: every widget in sight with its words and state."""
    seen = []
    for w in root.findChildren(QWidget):
        if not w.isVisibleTo(root) or isinstance(w, QProgressBar):
            continue
        if isinstance(w, QLabel):  # whole: a line cut to its width keeps the rest on hover
            seen.append(("words", w.toolTip() if w.text().endswith("…") and w.toolTip() else w.text()))
        elif isinstance(w, QAbstractSpinBox):
            seen.append(("number", w.objectName(), w.text(), w.isEnabled()))
        elif isinstance(w, QLineEdit) and not isinstance(w.parentWidget(), (QAbstractSpinBox, QComboBox)):
            seen.append(("field", w.objectName(), w.text(), w.isEnabled()))
        elif isinstance(w, QComboBox):
            seen.append(("choice", w.objectName(), w.currentText(), w.isEnabled()))
        elif isinstance(w, QAbstractButton) and w.text():
            seen.append(("button", w.text(), w.isEnabled(), w.isChecked()))
        elif isinstance(w, QAbstractItemView) and w.model() is not None:
            seen.append(("table", w.objectName(), _cell_texts(w)))
        elif isinstance(w, QTabWidget):
            seen.append(("tabs", w.currentIndex(), tuple(w.isTabEnabled(i) for i in range(w.count()))))
    return sorted(seen, key=repr)


def _painted(window) -> dict:
    """The painted views, by what they hold."""
    gen, layers, heads = window.generation_panel, window.layers_panel, window.heatmaps
    maps = heads.maps
    decoder = gen.decoder_panel.view
    return {
        "heads": None if maps is None else (maps.stage, maps.row_labels, maps.col_labels,
                                            tuple((m.title, m.footer, float(np.nansum(m.image)))
                                                  for m in maps.maps)),
        "decode steps": gen.decode_view.summary(),
        "tiles": gen.tiles_view.summary(),
        "a model writes": None if decoder._gen is None else (decoder._gen.model, decoder._gen.text),
        "layers grid": layers.grid.shape if layers._grid is not None else (0, 0),
        "induction heads": layers.induction.grid.data is not None,
    }


def state(window) -> dict:
    out = {key: _shown(window.docks[key].widget()) for key in DOCKS}
    out["stage header"] = _shown(window.stage_view._header_box)
    out.update(_painted(window))
    return out


def quiet(window) -> bool:
    """Every answer the config asks for has been drawn."""
    c = window.controller
    if getattr(c, "reading", None) is not None or c.computing or c.current_trace is None or not c.later.idle:
        return False
    gen, layers = window.generation_panel, window.layers_panel
    if not gen.decode_view.step_count or not gen.tiles_view.tile_count:
        return False
    if gen.note.text().startswith("Updating"):
        return False
    model = model_named(c.config.weights)
    if model is not None:
        if layers.head_scores is None or layers.patterns.rowCount() == 0:
            return False
        if not model.causal and layers.ranking.layer != c.config.layer:
            return False
    maps = window.heatmaps.maps
    return maps is not None and maps.stage == c.stage


def in_front(window, qtbot) -> None:
    """The Layers and Generation docks in sight, as the person has them (once the window's
    layout has put its own docks in front)."""
    qtbot.waitUntil(lambda: not window.shell.placing, timeout=WAIT_MS)
    for key in ("layers", "generation"):
        window.shell.built(key)
    bring_to_front(window.docks["layers"])
    bring_to_front(window.docks["generation"])
    qtbot.waitUntil(lambda: window.generation_panel.visibleRegion().isEmpty() is False, timeout=WAIT_MS)


def fresh_like(make_window, window, qtbot):
    fresh = make_window(window.controller.config, wait=False)
    fresh.resize(window.size())
    fresh.controller.start()
    in_front(fresh, qtbot)
    fresh.generation_panel.tabs.setCurrentIndex(window.generation_panel.tabs.currentIndex())
    fresh.layers_panel.tables.setCurrentIndex(window.layers_panel.tables.currentIndex())
    writer = window.generation_panel.decoder_panel  # what the person set stays theirs
    fresh.generation_panel.decoder_panel.steps_spin.setValue(writer.steps_spin.value())
    qtbot.waitUntil(lambda: quiet(fresh), timeout=WAIT_MS)
    return fresh


def differences(window, fresh, after: str) -> list[str]:
    """Each view whose words differ from the fresh window's, with the first difference."""
    now, new = state(window), state(fresh)
    found = []
    for view in now:
        if now[view] != new[view]:
            if isinstance(now[view], list) and isinstance(new[view], list):
                left = [x for x in now[view] if x not in new[view]][:2]
                right = [x for x in new[view] if x not in now[view]][:2]
            else:
                left, right = now[view], new[view]
            found.append(f"after {after}, {view}: shows {left!r}, a fresh window {right!r}")
    return found


def choose(window, qtbot, key: str) -> None:
    panel = window.weights_panel
    panel.combo.setCurrentIndex(panel.combo.findData(key))
    qtbot.waitUntil(lambda: window.controller.config.weights == key and quiet(window), timeout=WAIT_MS)


@both_models
def test_every_view_follows_gemma_then_minilm_then_random(make_window, qtbot):
    words = ("the", "cat", "sat", "on", "the", "mat")
    window = make_window(MHAConfig(d_model=64, n_heads=4, batch=1, seq=6, tokens=words, device="cpu"))
    in_front(window, qtbot)
    qtbot.waitUntil(lambda: quiet(window), timeout=WAIT_MS)

    choose(window, qtbot, "gemma3-270m")
    stale = differences(window, fresh_like(make_window, window, qtbot), "Gemma 3")
    # the person lets Gemma write and looks for its induction heads: results of this model only
    gen, layers = window.generation_panel, window.layers_panel
    gen.tabs.setCurrentIndex(2)
    writer = gen.decoder_panel
    writer.steps_spin.setValue(2)
    writer.generate_button.click()
    qtbot.waitUntil(lambda: writer.view.step_count == 2, timeout=WAIT_MS)
    layers.tables.setCurrentIndex(2)
    layers.induction.run_button.click()
    qtbot.waitUntil(lambda: layers.induction.grid.data is not None, timeout=WAIT_MS)
    layers.tables.setCurrentIndex(0)

    choose(window, qtbot, "minilm-l6")
    stale += differences(window, fresh_like(make_window, window, qtbot), "MiniLM-L6")
    choose(window, qtbot, "random")
    stale += differences(window, fresh_like(make_window, window, qtbot), "random weights")
    assert not stale, "\n".join(stale)


# what a fresh window gets wrong too: the words that come from the model's description ---------

def _trained(key: str, layer: int = 1) -> MHAConfig:
    """The model's layer on pieces spelled as its tokenizer spells them (no tokenizer needed)."""
    model = MODELS[key]
    first = (model.first_token,) if model.first_token else ()  # SmolLM2 puts nothing first
    tokens = (*first, "a", "b") if model.causal else (*first, "a", "b", "[SEP]")
    return MHAConfig(**trained_fields(model, layer), weights=key, layer=layer, tokens=tokens,
                     seq=len(tokens), batch=1, device="cpu")


@pytest.mark.parametrize("key", sorted(MODELS))
def test_the_pattern_columns_are_the_models_own(qtbot, key):
    from mha_explorer.qt.trained.layers_panel import LayersPanel

    model = MODELS[key]
    controller = Controller(_trained(key))  # never started: the columns need no answer
    panel = LayersPanel(controller, controller.jobs)
    qtbot.addWidget(panel)
    table = panel.patterns
    heads = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    first = [h for h in heads if h.startswith("first")]
    assert len(first) == 1 and model.first_token in first[0] and "()" not in first[0], heads
    if model.causal:  # a decoder's text has no [CLS] or [SEP]; its heads copy (induction)
        assert not any("[CLS]" in h or "[SEP]" in h for h in heads) and "induction" in heads
        assert "next" not in heads  # it never sees the token after
    else:
        assert "[SEP]" in heads and "induction" not in heads


@pytest.mark.parametrize("key", sorted(MODELS))
def test_the_whole_cache_counts_the_models_layers(qtbot, key):
    from mha_explorer.qt.decode.generation_panel import GenerationPanel
    from mha_explorer.qt.panels.kv_compare import KVCompareTable

    controller = Controller(MHAConfig(d_model=64, n_heads=4, seq=6))
    generation, table = GenerationPanel(controller, controller.jobs), KVCompareTable(controller)
    for widget in (generation, table):
        qtbot.addWidget(widget)
    usual = generation.layers_spin.value()  # no model says how many: the panel's own count
    assert table.layers == 1
    controller.set_config(_trained(key))
    qtbot.waitUntil(lambda: controller.later.idle)
    layers = MODELS[key].layers
    assert generation.layers_spin.value() == layers and table.layers == layers
    assert f"whole model: {layers} layers" in table.caption.text()
    controller.set_config(get_preset("llama3-8b").apply(MHAConfig(seq=6)))  # a preset says its own
    qtbot.waitUntil(lambda: controller.later.idle)
    assert generation.layers_spin.value() == get_preset("llama3-8b").layers
    controller.set_config(MHAConfig(d_model=64, n_heads=4, seq=6))  # and no model: as at first
    assert generation.layers_spin.value() == usual


def test_the_generation_dock_computes_only_once_it_is_in_sight(make_window, qtbot):
    window = make_window()  # the Generation dock starts behind the Parameters tab
    jobs = window.controller.jobs
    qtbot.waitUntil(lambda: "generation" not in window.shell.waiting(), timeout=WAIT_MS)
    generation = window.generation_panel
    qtbot.waitUntil(lambda: not generation._debounce.isActive(), timeout=WAIT_MS)
    assert jobs.latest(JobKind.decode) == 0 and jobs.latest(JobKind.tiles) == 0  # nobody asked
    bring_to_front(window.docks["generation"])
    qtbot.waitUntil(lambda: generation.decode_view.step_count > 0, timeout=WAIT_MS)
