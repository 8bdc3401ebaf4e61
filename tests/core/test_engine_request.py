"""The engine's request object, its weight sources and its refusals, as a caller sees them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.config.rules import trained_fields
from mha_explorer.core.engine import runner as engine
from mha_explorer.core.engine import weights as weight_sources
from mha_explorer.core.engine.runner import DisplayCapError, EngineRequest
from mha_explorer.core.models.minilm.description import MINILM_L6
from mha_explorer.core.plan.memory import FULL_DETAIL_MAX_CELLS, MemoryBudgetError, estimate


def small(**kw) -> MHAConfig:
    return MHAConfig(**{**dict(d_model=16, n_heads=4, batch=2, seq=6, device="cpu", seed=5), **kw})


def test_a_request_and_the_keyword_form_give_the_same_trace():
    c = small(causal=True)
    by_request = engine.run(EngineRequest(c, mode="windowed", show_batch=1, show_rows_from=2))
    by_keywords = engine.run(c, mode="windowed", show_batch=1, show_rows_from=2)
    assert by_request.mode == by_keywords.mode == "windowed" and by_request.batch_index == 1
    np.testing.assert_array_equal(by_request.output, by_keywords.output)


def test_a_request_is_frozen_and_refuses_extra_fields():
    request = EngineRequest(small())
    with pytest.raises(AttributeError):
        request.mode = "full"  # type: ignore[misc]
    with pytest.raises(TypeError):
        engine.run(request, mode="full")


def test_forcing_full_mode_beyond_the_display_cap_names_the_display_cap_not_memory():
    # B·H·T·S just above the cap, yet tiny in bytes: the budget is not the reason
    c = MHAConfig(d_model=8, n_heads=1, batch=1, seq=4097, device="cpu")
    assert c.batch * c.H * c.T * c.S > FULL_DETAIL_MAX_CELLS
    budget = 100 * estimate(c, host_copy=False).full_bytes
    with pytest.raises(DisplayCapError) as info:
        engine.run(EngineRequest(c, mode="full", budget_bytes=budget))
    assert isinstance(info.value, ConfigError) and not isinstance(info.value, MemoryBudgetError)
    assert "display cap" in info.value.message and "windowed" in info.value.message
    assert "budget" not in info.value.message


@pytest.mark.parametrize("source", ["minilm-l6", "lab"])
def test_a_trained_source_that_is_not_installed_is_a_config_error(monkeypatch, source):
    monkeypatch.setitem(weight_sources.TRAINED_SOURCES, source, "mha_explorer.core.no_such_module:Nothing")
    # a config the trained model accepts (its shape and word pieces), so only the source is missing
    fits = {"minilm-l6": {**trained_fields(MINILM_L6, 1), "tokens": ("[CLS]", "hi", "[SEP]"), "seq": 3}}
    with pytest.raises(ConfigError) as info:
        engine.run(small(weights=source, **fits.get(source, {})))
    assert info.value.field == "weights" and "not installed" in info.value.message


class NotedWeights(weight_sources.RandomWeights):
    """Random weights that say where they come from, as a trained source would."""

    def notes(self, cfg):
        return ("a test source, layer 1",)


def test_the_source_chosen_by_the_config_gives_weights_inputs_tokens_and_notes(monkeypatch):
    monkeypatch.setitem(weight_sources.TRAINED_SOURCES, "lab", f"{__name__}:NotedWeights")
    c = small(weights="lab", tokens=("a", "b", "a", "c", "d", "e"))
    trace = engine.run(c)
    assert "a test source, layer 1" in trace.notes
    assert trace.tokens_q == c.tokens
    x = trace.tensors["input"]["X"]
    np.testing.assert_array_equal(x[:, 0], x[:, 2])  # the source's inputs: same word, same vector


def test_weights_are_reused_while_only_batch_and_length_change(monkeypatch):
    weight_sources.WEIGHT_CACHE.clear()
    made: list[int] = []
    real = weight_sources.RandomWeights.weights

    def counted(self, cfg, device, dtype, *rest):
        made.append(cfg.d_model)
        return real(self, cfg, device, dtype, *rest)

    monkeypatch.setattr(weight_sources.RandomWeights, "weights", counted)
    c = small()
    first = engine.run(c)
    engine.run(c.replace(batch=3, seq=9))
    engine.run(c.replace(seq=4, kv_seq=7, causal=True))
    assert made == [16]
    engine.run(c.replace(seed=6))  # other weights: made again
    assert made == [16, 16]
    np.testing.assert_array_equal(first.weights["W_Q"], engine.run(c).weights["W_Q"])


def test_low_precision_weights_are_the_float32_draw_rounded():
    """Made straight at the dtype, they equal the float32 weights cast: same seed, same layer."""
    w32 = engine.run(small()).weights
    w16 = engine.run(small(dtype="float16")).weights
    for name in w32:
        want = torch.from_numpy(w32[name]).half().float().numpy()
        np.testing.assert_array_equal(w16[name], want)


def test_positions_none_leaves_the_layer_unchanged():
    x = torch.randn(1, 3, 8)
    q, k = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)
    from mha_explorer.core.kernels.steps import add_positions, rotate_qk

    c = MHAConfig(d_model=8, n_heads=2, seq=3)
    assert add_positions(x, c) is x
    assert rotate_qk(q, k, c) == (q, k)


@pytest.mark.parametrize("kind", ["sinusoidal", "learned", "rope"])
def test_every_position_kind_is_computed_and_changes_the_output(kind):
    plain, placed = engine.run(small()), engine.run(small(positions=kind))
    assert not np.allclose(plain.output, placed.output)
    shown = "rope" if kind == "rope" else "positions"
    assert placed.tensors[shown] and shown not in plain.tensors
