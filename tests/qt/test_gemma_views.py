"""A trained decoder in the window: the Layers dock's 18 × 4 grid tells local layers from global
ones, the induction demonstration finds the copying heads, and the model writes with its real
KV cache in the Generation dock."""

from __future__ import annotations

import pytest

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.rules import trained_fields
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.gemma3 import files

AVAILABLE, WHY = files.is_available()
pytestmark = [pytest.mark.skipif(not AVAILABLE, reason=WHY), pytest.mark.xdist_group("trained-models")]
GEMMA = MODELS["gemma3-270m"]
WAIT_MS = 120_000


@pytest.fixture
def gemma_window(make_window):
    from mha_explorer.core.models.gemma3.pieces import as_pieces

    pieces = as_pieces(["The", "cat", "sat", "on", "the", "mat", ".", "The", "cat", "sat", "on", "the"])
    cfg = MHAConfig(**trained_fields(GEMMA, 6), weights=GEMMA.key, layer=6, tokens=pieces,
                    seq=len(pieces), batch=1)
    return make_window(cfg)


def test_the_layers_grid_and_the_induction_heads(gemma_window, qtbot):
    w = gemma_window
    w.docks["layers"].show()
    w.docks["layers"].raise_()
    panel = w.layers_panel
    qtbot.waitUntil(lambda: panel._scores is not None, timeout=WAIT_MS)
    assert panel.grid.shape == (18, 4)
    assert not panel.tables.isTabEnabled(1) and panel.tables.isTabEnabled(2)  # a decoder's tabs
    panel.induction.run_button.click()
    qtbot.waitUntil(lambda: panel.induction.grid.data is not None, timeout=WAIT_MS)
    data = panel.induction.grid.data
    assert data.prefix_matching.shape == (18, 4)
    assert data.loss_second < data.loss_first / 4  # the second copy is copied
    layer, head, score = data.best
    assert score >= 0.6 and data.layer_kinds[layer - 1] in ("local", "global")
    assert f"layer {layer}, head {head}" in panel.induction.summary.text()


def test_the_model_writes_with_its_cache(gemma_window, qtbot):
    w = gemma_window
    w.docks["generation"].show()
    w.docks["generation"].raise_()
    decoder = w.generation_panel.decoder_panel
    decoder.steps_spin.setValue(4)
    decoder.generate_button.click()
    qtbot.waitUntil(lambda: decoder.view.step_count == 4, timeout=WAIT_MS)
    last = decoder.view._gen.steps[-1]
    assert len(last.cache_tokens) == 18 and last.weights.shape[0] == 4
    assert decoder.generate_button.isEnabled() and not decoder.cancel_button.isEnabled()
    decoder.back_button.click()
    assert decoder.view.step() == 3
