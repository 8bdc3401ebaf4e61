"""The variants through engine.run, checked against references written here and torch's SDPA:
latent attention against a per-head float64 loop, sparse masks against
F.scaled_dot_product_attention with the same boolean mask (whole and in row blocks),
RoPE against a pair-by-pair 2×2 rotation, sinusoidal positions against the formula."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_mla import reference as mla_reference  # the per-head float64 loop beside it

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.engine import layout as engine_layout
from mha_explorer.core.engine import runner as engine
from mha_explorer.core.engine.runner import WholeOnlyError
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.plan.memory import MemoryBudgetError, estimate


def _f64(a) -> torch.Tensor:
    return torch.from_numpy(np.asarray(a, dtype=np.float64))


MLA_CASES = {
    "plain query": dict(d_model=32, n_heads=4, seq=5, mla=True),
    "query latent, rope, causal, bias": dict(d_model=32, n_heads=2, seq=6, mla=True, q_lora_rank=12,
                                             positions="rope", causal=True, bias=True),
    "window, global, cross": dict(d_model=24, n_heads=3, seq=4, kv_seq=6, mla=True, causal=True,
                                  causal_alignment="bottom-right", window=2, global_tokens=1,
                                  positions="rope", kv_lora_rank=10, qk_rope_head_dim=4, bias=False),
}


@pytest.mark.parametrize("case", sorted(MLA_CASES))
def test_latent_attention_through_the_engine_equals_the_per_head_reference(case):
    cfg = MHAConfig(**{**MLA_CASES[case], "device": "cpu", "batch": 2})
    trace = engine.run(cfg)
    x = _f64(trace.tensors["input"]["X"])
    xkv = _f64(trace.tensors["input"]["X_kv"]) if cfg.is_cross else x
    w = {name: _f64(trace.weights[name]) for name in trace.weights}
    vis = cfg.mask_spec.visible(0, cfg.T, cfg.T, cfg.S)
    expected = mla_reference(cfg, x, xkv, w, None if vis is None else torch.from_numpy(vis))
    torch.testing.assert_close(_f64(trace.output), expected, rtol=1e-4, atol=1e-4)
    # the trace holds the plan's stages, in the plan's shapes
    plan = build_plan(cfg)
    for stage in plan.stages:
        for spec in stage.tensors:
            if spec.name in trace.tensors.get(stage.id, {}):
                assert trace.tensors[stage.id][spec.name].shape == spec.shape, (stage.id, spec.name)


def test_latent_attention_runs_whole_or_says_why_not():
    cfg = MHAConfig(d_model=32, n_heads=4, seq=5, mla=True, device="cpu")
    with pytest.raises(WholeOnlyError) as info:
        engine.run(cfg, mode="windowed")
    assert info.value.field == "mode"
    with pytest.raises(MemoryBudgetError):
        engine.run(cfg, budget_bytes=estimate(cfg).full_bytes - 1)
    assert engine.run(cfg, budget_bytes=estimate(cfg).full_bytes).mode == "full"


def test_latent_estimate_counts_more_than_the_weights_and_the_stages():
    cfg = MHAConfig(d_model=64, n_heads=4, seq=32, batch=2, mla=True, causal=True)
    plan = build_plan(cfg)
    assert estimate(cfg).full_bytes > plan.memory.weights + plan.memory.activations


def _sdpa_context(trace, cfg, q_stage="transpose") -> torch.Tensor:
    q = _f64(trace.tensors[q_stage]["Q"])  # [nb, H, T, d_k]
    k = _f64(trace.tensors[q_stage]["K"])  # [nb, Hkv, S, d_k]
    v = _f64(trace.tensors["transpose"]["V"])
    g = cfg.H // cfg.Hkv
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)  # [nb, H, S, d_k]
    vis = cfg.mask_spec.visible(0, cfg.T, cfg.T, cfg.S)
    mask = None if vis is None else torch.from_numpy(vis)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return torch.nan_to_num(out)  # rows that see nothing: the engine shows 0


MASKS = {
    "sliding window": dict(causal=True, window=3),
    "dilated window": dict(window=3, stride=2),
    "strided causal": dict(causal=True, stride=3),
    "local + global": dict(causal=True, window=2, global_tokens=2),
    "window, bottom-right cross": dict(causal=True, window=2, kv_seq=11, causal_alignment="bottom-right"),
}


@pytest.mark.parametrize("blocks", [False, True], ids=["one block", "row blocks"])
@pytest.mark.parametrize("mask", sorted(MASKS))
def test_engine_masks_equal_sdpa_with_the_same_boolean_mask(mask, blocks, monkeypatch):
    cfg = MHAConfig(d_model=24, n_heads=6, n_kv_heads=2, seq=9, batch=2, device="cpu", **MASKS[mask])
    if blocks:  # three query rows at a time: every block builds only its own rows of the mask
        monkeypatch.setattr(engine_layout, "chunk_rows", lambda c: 3)
    trace = engine.run(cfg, mode="windowed" if blocks else "full")
    ctx = _f64(trace.tensors["weighted_sum"]["context"])
    expected = _sdpa_context(trace, cfg)
    torch.testing.assert_close(ctx, expected, rtol=1e-5, atol=1e-5)
    vis = cfg.mask_spec.visible(0, cfg.T, cfg.T, cfg.S)
    hidden_weight = trace.tensors["softmax"]["weights"][:, :, ~vis]
    assert np.all(hidden_weight == 0)


def _rotate_pairs(x: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """RoPE written out: the pair (x_i, x_{i+d/2}) at position p turned by p·10000^(−2i/d)."""
    out = x.astype(np.float64).copy()
    d = x.shape[-1]
    for t, p in enumerate(positions):
        for i in range(d // 2):
            a = p * 10000.0 ** (-2 * i / d)
            c, s = math.cos(a), math.sin(a)
            lo, hi = x[..., t, i].astype(np.float64), x[..., t, i + d // 2].astype(np.float64)
            out[..., t, i] = lo * c - hi * s
            out[..., t, i + d // 2] = hi * c + lo * s
    return out


@pytest.mark.parametrize("extra", [{}, dict(kv_seq=7, causal=True, causal_alignment="bottom-right")],
                         ids=["self", "cross bottom-right"])
def test_rope_through_the_engine_equals_the_pairwise_rotation(extra):
    cfg = MHAConfig(d_model=32, n_heads=4, n_kv_heads=2, seq=5, batch=2, positions="rope",
                    device="cpu", **extra)
    trace = engine.run(cfg)
    assert "rope" in build_plan(cfg).stage_ids
    offset = cfg.S - cfg.T if cfg.causal_alignment == "bottom-right" else 0
    q0, k0 = trace.tensors["transpose"]["Q"], trace.tensors["transpose"]["K"]
    q_rot = _rotate_pairs(q0, np.arange(cfg.T) + offset)
    k_rot = _rotate_pairs(k0, np.arange(cfg.S))
    np.testing.assert_allclose(trace.tensors["rope"]["Q"], q_rot, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(trace.tensors["rope"]["K"], k_rot, rtol=1e-5, atol=1e-5)
    # lengths unchanged, and attention used the turned Q and K
    np.testing.assert_allclose(np.linalg.norm(trace.tensors["rope"]["Q"], axis=-1),
                               np.linalg.norm(q0, axis=-1), rtol=1e-5)
    torch.testing.assert_close(_f64(trace.tensors["weighted_sum"]["context"]),
                               _sdpa_context(trace, cfg, q_stage="rope"), rtol=1e-5, atol=1e-5)


def test_sinusoidal_positions_through_the_engine_follow_the_formula():
    cfg = MHAConfig(d_model=8, n_heads=2, batch=1, tokens=("the", "cat", "the"), seq=3,
                    positions="sinusoidal", device="cpu")
    trace = engine.run(cfg)
    x = trace.tensors["input"]["X"]
    np.testing.assert_array_equal(x[0, 0], x[0, 2])  # the same word, the same input row
    pe = np.array([[math.sin(p / 10000 ** (i / 8)) if i % 2 == 0 else math.cos(p / 10000 ** ((i - 1) / 8))
                    for i in range(8)] for p in range(3)])
    np.testing.assert_allclose(trace.tensors["positions"]["X"][0], x[0] + pe, rtol=1e-6, atol=1e-6)
    placed = trace.tensors["positions"]["X"][0]
    assert not np.allclose(placed[0], placed[2])  # ... and different rows once placed
    torch.testing.assert_close(_f64(trace.tensors["project"]["Q"][0]),
                               _f64(placed) @ _f64(trace.weights["W_Q"]).T + _f64(trace.weights["b_Q"]),
                               rtol=1e-5, atol=1e-5)


def test_learned_positions_are_a_seeded_table_and_say_so():
    cfg = MHAConfig(d_model=8, n_heads=2, seq=4, positions="learned", device="cpu")
    one, two = engine.run(cfg), engine.run(cfg)
    np.testing.assert_array_equal(one.tensors["positions"]["PE"], two.tensors["positions"]["PE"])
    assert any("seeded random table" in n for n in one.notes)


def test_trained_weights_with_latent_attention_are_refused_naming_weights(tmp_path):
    # refused by the config itself, before any run, with the way back as its fix
    with pytest.raises(ConfigError) as info:
        MHAConfig(d_model=16, n_heads=2, seq=3, mla=True, weights="lab", weights_path=str(tmp_path))
    assert info.value.field == "weights" and {"weights": "random"} in info.value.suggestions
