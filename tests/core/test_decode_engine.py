"""Decoding with a KV cache gives the rows of one full causal pass.

Step 0 (the prompt) must equal the full pass's first P rows, and step t its row
P + t - 1. The full pass is the app's own engine (MHA, GQA, MQA, and latent
attention in its naive form, while the decoder runs the absorbed one), and for
sliding windows torch's F.scaled_dot_product_attention with the window's mask.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.engine import runner as engine
from mha_explorer.core.engine.decode import layer_tensors, run_decode

ATOL = 1e-5  # fp32

VARIANTS = {
    "MHA": MHAConfig(d_model=32, n_heads=4, batch=2),
    "GQA": MHAConfig(d_model=48, n_heads=6, n_kv_heads=2, batch=2),
    "MQA": MHAConfig(d_model=32, n_heads=8, n_kv_heads=1, batch=3, bias=False),
}


def _rows_of(run, full_output):
    for step in run.steps:
        p0, p1 = step.positions
        yield step, full_output[:, p0:p1]


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_step_equals_the_full_causal_pass(name):
    run = run_decode(VARIANTS[name], prompt=5, steps=6)
    assert run.config.causal and run.config.causal_alignment == "bottom-right"
    full = engine.run(run.config).output  # [B, P + N, D], all batch elements
    assert len(run.steps) == 7
    for step, rows in _rows_of(run, full):
        np.testing.assert_allclose(step.output, rows, atol=ATOL, rtol=0)


def test_a_one_token_prompt_works():
    run = run_decode(VARIANTS["GQA"], prompt=1, steps=3)
    full = engine.run(run.config).output
    for step, rows in _rows_of(run, full):
        np.testing.assert_allclose(step.output, rows, atol=ATOL, rtol=0)


def _sdpa_pass(cfg, x, w, visible):
    """One full pass with torch's SDPA and an explicit boolean mask [T, T]."""
    B, T, D = x.shape
    H, Hkv, dk = cfg.H, cfg.Hkv, cfg.d_k
    q = F.linear(x, w["W_Q"], w.get("b_Q")).view(B, T, H, dk).transpose(1, 2)  # [B, H, T, d_k]
    k = F.linear(x, w["W_K"], w.get("b_K")).view(B, T, Hkv, dk).transpose(1, 2)  # [B, Hkv, T, d_k]
    v = F.linear(x, w["W_V"], w.get("b_V")).view(B, T, Hkv, dk).transpose(1, 2)  # [B, Hkv, T, d_k]
    g = H // Hkv
    ctx = F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                                         attn_mask=visible)  # [B, H, T, d_k]
    return F.linear(ctx.transpose(1, 2).reshape(B, T, D), w["W_O"], w.get("b_O"))  # [B, T, D]


@pytest.mark.parametrize("window", [1, 3, 4, 20])
@pytest.mark.parametrize("kv_heads", [4, 2, 1])
def test_a_sliding_window_decodes_like_the_windowed_full_pass(window, kv_heads):
    cfg = MHAConfig(d_model=32, n_heads=4, n_kv_heads=kv_heads, batch=2, window=window)
    run = run_decode(cfg, prompt=6, steps=5)
    L = 11
    i, j = np.arange(L)[:, None], np.arange(L)[None, :]
    visible = torch.from_numpy((j <= i) & (i - j < window))  # causal, the last `window` keys
    w, x, _ = layer_tensors(run.config)  # x: [B, L, D]
    with torch.no_grad():
        full = _sdpa_pass(run.config, x, w, visible).numpy()
    for step, rows in _rows_of(run, full):
        np.testing.assert_allclose(step.output, rows, atol=ATOL, rtol=0)
    # the rolling cache holds the last min(S_t, W) positions after each step
    for t, step in enumerate(run.steps):
        seen = 6 + t
        assert step.cache_positions == tuple(range(max(0, seen - window), seen))
    assert run.cache_k.shape == (kv_heads, min(L, window), 8)


def test_the_score_row_is_q_dot_the_cached_keys_and_its_softmax_sums_to_one():
    cfg = VARIANTS["GQA"]
    run = run_decode(cfg, prompt=3, steps=2, show_batch=1)
    full = run.config
    w, xs, _ = layer_tensors(full)
    x = xs[1]  # [L, D]
    q = F.linear(x, w["W_Q"], w["b_Q"]).view(5, 6, 8)  # [L, H, d_k]
    k = F.linear(x, w["W_K"], w["b_K"]).view(5, 2, 8)  # [L, Hkv, d_k]
    last = run.steps[-1]  # the token at position 4 over keys 0..4
    assert last.scores.shape == (6, 1, 5)
    for h in range(6):
        expected = (k[:, h // 3] @ q[4, h]) / math.sqrt(8)  # head h reads kv head h // 3
        np.testing.assert_allclose(last.scores[h, 0], expected.detach().numpy(), atol=ATOL, rtol=0)
    np.testing.assert_allclose(last.weights.sum(-1), 1.0, atol=1e-6)
    prompt = run.steps[0]
    assert prompt.scores.shape == (6, 3, 3)
    assert np.isneginf(prompt.scores[:, 0, 1:]).all()  # the prompt pass is causal
    assert (prompt.weights[:, 0, 1:] == 0).all()


def test_too_many_tokens_or_no_steps_are_refused():
    with pytest.raises(ConfigError):
        run_decode(VARIANTS["MHA"], prompt=8_000, steps=500)
    with pytest.raises(ConfigError):
        run_decode(VARIANTS["MHA"], prompt=2, steps=0)


MLA_CASES = {
    "plain query": {},
    "plain query, window 3": {"window": 3},
    "query latent": {"q_lora_rank": 12, "bias": True},
    "query latent, window 2": {"q_lora_rank": 12, "window": 2},
}


@pytest.mark.parametrize("case", list(MLA_CASES))
def test_latent_cache_decoding_equals_the_engines_full_causal_pass(case):
    # D 32, H 4 → d_k 8: r_kv 32, d_n 8, d_r 4, d_v 8 by mla_dims' defaults
    cfg = MHAConfig(d_model=32, n_heads=4, batch=2, mla=True, positions="rope", **MLA_CASES[case])
    run = run_decode(cfg, prompt=5, steps=6)
    full = engine.run(run.config).output  # the naive form over all 11 tokens, bottom-right causal
    for step, rows in _rows_of(run, full):
        np.testing.assert_allclose(step.output, rows, atol=ATOL, rtol=0)
    window = cfg.window
    if window is not None:  # the window is really applied: without it the last rows differ
        unwindowed = engine.run(run.config.replace(window=None)).output
        assert np.abs(unwindowed[:, -1] - full[:, -1]).max() > 1e-3
    kept = 11 if window is None else window
    assert run.cache_k.shape == (1, kept, 32)  # the latent c_KV of the shown batch element
    assert run.cache_v.shape == (1, kept, 4)  # the shared RoPE key
    # the last row scores the kept cache and its own key; the one leaving the window is masked
    last = run.steps[-1].scores
    assert last.shape == (4, 1, min(11, kept + 1))
    assert (np.isfinite(last).sum(-1) == kept).all()
    np.testing.assert_allclose(run.steps[-1].weights.sum(-1), 1.0, atol=1e-6)


def test_latent_cache_decoding_turns_each_token_by_its_own_position():
    # the same layer without RoPE gives other outputs: the positions are not ignored
    cfg = MHAConfig(d_model=32, n_heads=4, batch=1, mla=True, positions="rope")
    with_rope = run_decode(cfg, prompt=3, steps=3).steps[-1].output
    without = run_decode(cfg.replace(positions="none"), prompt=3, steps=3)
    assert np.abs(with_rope - without.steps[-1].output).max() > 1e-3
    full = engine.run(without.config).output
    np.testing.assert_allclose(without.steps[-1].output, full[:, -1:], atol=ATOL, rtol=0)


def test_latent_cache_refuses_trained_weights_in_one_line():
    cfg = MHAConfig(d_model=32, n_heads=4, mla=True)
    with pytest.raises(ConfigError, match="random weights"):
        run_decode(cfg.replace(weights="lab"), prompt=2, steps=1)


@pytest.mark.parametrize("positions", ["rope", "sinusoidal", "learned"])
def test_plain_attention_decodes_with_the_engines_positions(positions):
    cfg = MHAConfig(d_model=32, n_heads=4, n_kv_heads=2, batch=2, positions=positions, window=3)
    run = run_decode(cfg, prompt=4, steps=4)
    full = engine.run(run.config).output
    for step, rows in _rows_of(run, full):
        np.testing.assert_allclose(step.output, rows, atol=ATOL, rtol=0)
    unplaced = engine.run(run.config.replace(positions="none")).output
    assert np.abs(unplaced - full).max() > 1e-3  # the positions change what the full pass gives
