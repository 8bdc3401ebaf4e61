"""SmolLM2 in the window, with nothing written for it: the Layers dock's grid is 30 × 9, the
induction demonstration finds its copying heads, and it writes with its real KV cache in the
Generation dock. Its tokens carry no first token, so the dock must know them as its own."""

from __future__ import annotations

import pytest

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.rules import trained_fields
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import MODELS

SMOLLM2 = MODELS["smollm2-135m"]
AVAILABLE, WHY = runtime.is_available(SMOLLM2)
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=WHY)
WAIT_MS = 120_000


@pytest.fixture
def smollm2_window(make_window):
    words = ["The", "cat", "sat", "on", "the", "mat", ".", "The", "cat", "sat", "on", "the"]
    pieces = runtime.as_pieces(SMOLLM2, words)
    cfg = MHAConfig(**trained_fields(SMOLLM2, 12), weights=SMOLLM2.key, layer=12, tokens=pieces,
                    seq=len(pieces), batch=1)
    return make_window(cfg)


def test_the_layers_grid_and_the_induction_heads(smollm2_window, qtbot):
    w = smollm2_window
    w.docks["layers"].show()
    w.docks["layers"].raise_()
    panel = w.layers_panel
    qtbot.waitUntil(lambda: panel._scores is not None, timeout=WAIT_MS)
    assert panel.grid.shape == (30, 9)
    panel.induction.run_button.click()
    qtbot.waitUntil(lambda: panel.induction.grid.data is not None, timeout=WAIT_MS)
    data = panel.induction.grid.data
    assert data.prefix_matching.shape == (30, 9) and data.loss_second < data.loss_first / 2


def test_it_writes_with_its_cache(smollm2_window, qtbot):
    w = smollm2_window
    w.docks["generation"].show()
    w.docks["generation"].raise_()
    decoder = w.generation_panel.decoder_panel
    decoder.steps_spin.setValue(3)
    decoder.generate_button.click()
    qtbot.waitUntil(lambda: decoder.view.step_count == 3, timeout=WAIT_MS)
    last = decoder.view._gen.steps[-1]
    assert len(last.cache_tokens) == 30 and last.weights.shape[0] == 9
