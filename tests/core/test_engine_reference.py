"""The engine against torch's own attention, and its promises about masks,
seeds, tokens, GQA head sharing, windowed mode and the memory guard.

Every reference here is built from the trace's inputs and weights only (never
from the engine's intermediate tensors), so a wrong stage shows up as a wrong
output. Sizes are tiny: the whole file runs in a few seconds on a laptop CPU.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.engine import weights as weight_sources
from mha_explorer.core.engine.runner import run
from mha_explorer.core.plan import memory
from mha_explorer.core.plan.memory import MemoryBudgetError, format_bytes

FP32 = dict(atol=1e-5, rtol=1e-5)


def cfg(**kw) -> MHAConfig:
    # device="cpu": the fp32 tolerances assume CPU kernels (no TF32 on a GPU)
    base = dict(d_model=16, n_heads=4, batch=3, seq=5, device="cpu", seed=7)
    return MHAConfig(**{**base, **kw})


def hidden_mask(c: MHAConfig) -> torch.Tensor | None:
    """Bool [T, S], True = hidden, written out from the alignment's definition."""
    if not c.causal:
        return None
    offset = c.S - c.T if c.causal_alignment == "bottom-right" else 0
    i = torch.arange(c.T)[:, None]
    j = torch.arange(c.S)[None, :]
    return j > i + offset  # query i sees keys 0..i+offset


def tensor(kept) -> torch.Tensor:
    """A trace's array as a CPU tensor (a low-precision run keeps its tensors held, not numpy)."""
    return torch.from_numpy(np.asarray(kept))


def inputs(trace):
    x = tensor(trace.tensors["input"]["X"])
    xkv = tensor(trace.tensors["input"].get("X_kv", trace.tensors["input"]["X"]))
    return x, xkv


def weights(trace) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(v) for k, v in trace.weights.items()}


def torch_mha(trace):
    """nn.MultiheadAttention loaded with the trace's weights: (output, per-head weights)."""
    c, w = trace.config, weights(trace)
    mha = torch.nn.MultiheadAttention(c.d_model, c.H, bias=c.bias, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([w["W_Q"], w["W_K"], w["W_V"]]))
        mha.out_proj.weight.copy_(w["W_O"])
        if c.bias:
            mha.in_proj_bias.copy_(torch.cat([w["b_Q"], w["b_K"], w["b_V"]]))
            mha.out_proj.bias.copy_(w["b_O"])
    mha.eval()
    x, xkv = inputs(trace)
    with torch.no_grad():
        y, a = mha(x, xkv, xkv, attn_mask=hidden_mask(c), need_weights=True,
                   average_attn_weights=False)
    return y.numpy(), a.numpy()


def sdpa_reference(trace, dtype=torch.float32):
    """Projections + F.scaled_dot_product_attention(enable_gqa=True) + W_O, in ``dtype``."""
    c = trace.config
    w = {k: v.to(dtype) for k, v in weights(trace).items()}
    x, xkv = (t.to(dtype) for t in inputs(trace))
    B, T, S, H, Hkv, dk = c.batch, c.T, c.S, c.H, c.Hkv, c.d_k
    q = F.linear(x, w["W_Q"], w.get("b_Q")).view(B, T, H, dk).transpose(1, 2)
    k = F.linear(xkv, w["W_K"], w.get("b_K")).view(B, S, Hkv, dk).transpose(1, 2)
    v = F.linear(xkv, w["W_V"], w.get("b_V")).view(B, S, Hkv, dk).transpose(1, 2)
    top_left = c.causal and (c.T == c.S or c.causal_alignment == "top-left")
    mask = hidden_mask(c)
    attend = None if mask is None or top_left else ~mask  # sdpa: True = may attend
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=attend, is_causal=top_left,
                                       enable_gqa=True)
    y = F.linear(o.transpose(1, 2).reshape(B, T, c.d_model), w["W_O"], w.get("b_O"))
    return y.float().numpy()


# --- nn.MultiheadAttention ------------------------------------------------

LENGTHS = [(5, 5), (4, 7), (7, 4)]  # self, cross with S > T, cross with T > S
CAUSAL = [None, "top-left", "bottom-right"]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("causal", CAUSAL)
@pytest.mark.parametrize("T,S", LENGTHS)
def test_matches_nn_multihead_attention(bias, causal, T, S):
    c = cfg(bias=bias, seq=T, kv_seq=S, causal=causal is not None,
            causal_alignment=causal or "top-left")
    trace = run(c)
    y_ref, a_ref = torch_mha(trace)
    # bottom-right with T > S hides every key from the first T - S queries: torch
    # gives NaN there, the engine 0 (checked in test_fully_masked_rows_*).
    ok = ~trace.masked_rows
    np.testing.assert_allclose(trace.output[:, ok], y_ref[:, ok], **FP32)
    np.testing.assert_allclose(trace.tensors["softmax"]["weights"][:, :, ok], a_ref[:, :, ok], **FP32)


# --- scaled_dot_product_attention, MHA / GQA / MQA ------------------------

@pytest.mark.parametrize("heads,kv_heads", [(4, 4), (4, 2), (4, 1), (6, 3)])
@pytest.mark.parametrize("causal", CAUSAL)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("T,S", [(5, 5), (3, 6)])
def test_matches_sdpa_with_gqa(heads, kv_heads, causal, bias, T, S):
    c = cfg(d_model=24, n_heads=heads, n_kv_heads=kv_heads, bias=bias, seq=T, kv_seq=S,
            causal=causal is not None, causal_alignment=causal or "top-left")
    trace = run(c)
    np.testing.assert_allclose(trace.output, sdpa_reference(trace), **FP32)


# --- fp16 / bf16 -----------------------------------------------------------

# torch's own low-precision tolerances (torch.testing: fp16 rtol 1e-3, bf16 rtol
# 1.6e-2). The atol of 1e-3 covers values near zero: 1e-3 is about one fp16 ulp
# at 1, and far below one bf16 ulp (7.8e-3), so it loosens nothing for bf16.
STAGE_TOL = {"float16": dict(atol=1e-3, rtol=1e-3), "bfloat16": dict(atol=1e-3, rtol=1.6e-2)}
# End to end, five stages each round to the dtype (Q/K/V, scores, weights,
# context, Y) and their errors compound; the per-stage checks use torch's
# tolerances, the whole chain gets 4x (measured worst: about 2x, over 80
# seed/shape combinations).
CHAIN_TOL = {"float16": dict(atol=4e-3, rtol=4e-3), "bfloat16": dict(atol=4e-2, rtol=6.4e-2)}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("heads,kv_heads,causal", [(4, 4, False), (4, 2, True), (4, 1, True)])
def test_low_precision_stages_match_fp32_on_the_same_inputs(dtype, heads, kv_heads, causal):
    """Each stage, recomputed in fp32 from the engine's own (already rounded)
    inputs to that stage and rounded once to the dtype, matches the engine's stage:
    the fp32 reference follows the same dtype path, so only one rounding differs."""
    c = cfg(d_model=32, n_heads=heads, n_kv_heads=kv_heads, seq=6, kv_seq=5, causal=causal,
            dtype=dtype)
    trace = run(c)
    t, w = trace.tensors, weights(trace)
    tol, td = STAGE_TOL[dtype], getattr(torch, dtype)

    def rnd(x: torch.Tensor) -> np.ndarray:
        return x.to(td).float().numpy()

    x, xkv = inputs(trace)
    np.testing.assert_allclose(t["project"]["Q"], rnd(F.linear(x, w["W_Q"], w.get("b_Q"))), **tol)
    np.testing.assert_allclose(t["project"]["K"], rnd(F.linear(xkv, w["W_K"], w.get("b_K"))), **tol)
    np.testing.assert_allclose(t["project"]["V"], rnd(F.linear(xkv, w["W_V"], w.get("b_V"))), **tol)

    g = c.group_size
    q = tensor(t["transpose"]["Q"])
    k = tensor(t["transpose"]["K"]).repeat_interleave(g, 1)
    v = tensor(t["transpose"]["V"]).repeat_interleave(g, 1)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(c.d_k))
    if c.causal:
        scores = scores.masked_fill(hidden_mask(c), float("-inf"))
    np.testing.assert_allclose(t["scores"]["scores"], rnd(scores), **tol)
    a = tensor(t["scores"]["scores"]).softmax(-1)
    np.testing.assert_allclose(t["softmax"]["weights"], rnd(a), **tol)
    ctx = tensor(t["softmax"]["weights"]) @ v
    np.testing.assert_allclose(t["weighted_sum"]["context"], rnd(ctx), **tol)
    y = F.linear(tensor(t["merge"]["merged"]), w["W_O"], w.get("b_O"))
    np.testing.assert_allclose(trace.output, rnd(y), **tol)

    # and the whole chain against fp32 SDPA on the same rounded inputs and weights
    np.testing.assert_allclose(trace.output, sdpa_reference(trace), **CHAIN_TOL[dtype])


# --- softmax, determinism, tokens, GQA mapping -----------------------------

@pytest.mark.parametrize("causal", CAUSAL)
def test_unmasked_softmax_rows_sum_to_one(causal):
    c = cfg(seq=4, kv_seq=6, causal=causal is not None, causal_alignment=causal or "top-left")
    trace = run(c)
    sums = trace.tensors["softmax"]["weights"].sum(-1)  # [B, H, T]
    np.testing.assert_allclose(sums, np.ones_like(sums), atol=1e-6)
    assert not trace.masked_rows.any()


def test_deterministic_for_a_seed_and_different_across_seeds():
    a, b, other = run(cfg(seed=3)), run(cfg(seed=3)), run(cfg(seed=4))
    np.testing.assert_array_equal(a.output, b.output)
    for name in a.weights:
        np.testing.assert_array_equal(a.weights[name], b.weights[name])
        assert not np.array_equal(a.weights[name], other.weights[name]), name
    assert not np.array_equal(a.tensors["input"]["X"], other.tensors["input"]["X"])
    assert not np.allclose(a.output, other.output)


def test_same_word_gives_the_same_input_vector():
    words = ("the", "cat", "sat", "on", "the", "mat")
    trace = run(cfg(seq=len(words), tokens=words))
    x = trace.tensors["input"]["X"]  # [B, T, D]
    np.testing.assert_array_equal(x[:, 0], x[:, 4])  # "the" twice
    assert not np.array_equal(x[:, 0], x[:, 1])  # "the" vs "cat"
    assert trace.tokens_q == words


@pytest.mark.parametrize("heads,kv_heads", [(6, 2), (6, 3), (4, 1)])
def test_gqa_query_head_reads_kv_head_i_div_group(heads, kv_heads):
    c = cfg(d_model=12, n_heads=heads, n_kv_heads=kv_heads, seq=4, kv_seq=5)
    trace = run(c)
    q = trace.tensors["transpose"]["Q"]  # [B, H, T, d_k]
    k = trace.tensors["transpose"]["K"]  # [B, Hkv, S, d_k]
    assert k.shape[1] == kv_heads
    scores = trace.tensors["scores"]["scores"]
    g = heads // kv_heads
    for i in range(heads):
        expected = q[:, i] @ k[:, i // g].transpose(0, 2, 1) / math.sqrt(c.d_k)
        np.testing.assert_allclose(scores[:, i], expected, **FP32)


# --- windowed mode ---------------------------------------------------------

def _check_window(full, win, b):
    r0, r1 = win.rows
    assert win.mode == "windowed" and win.batch_index == b
    np.testing.assert_allclose(win.output[0], full.output[b], **FP32)
    for stage, name in (("scores", "scores"), ("softmax", "weights")):
        np.testing.assert_allclose(win.tensors[stage][name][0], full.tensors[stage][name][b, :, r0:r1],
                                   **FP32)


def test_windowed_mode_matches_full_mode():
    c = cfg(seq=6, kv_seq=5, causal=True, causal_alignment="bottom-right")
    full = run(c, mode="full")
    win = run(c, mode="windowed", show_batch=2, show_rows_from=1)
    assert win.rows == (0, 6)  # the whole of T fits the display window
    _check_window(full, win, 2)
    assert win.output_norms == pytest.approx(full.output_norms, rel=1e-5)


def test_windowed_rows_split_across_compute_chunks(monkeypatch):
    """A display window that straddles the compute blocks is still kept whole."""
    c = cfg(seq=10, kv_seq=6, causal=True)
    full = run(c, mode="full")
    # 3 rows shown, 2 rows computed at a time (H·rows·S cells = 4·2·6 = 48)
    monkeypatch.setattr(memory, "SHOWN_MAX_ROWS", 3)
    monkeypatch.setattr(memory, "CHUNK_MAX_CELLS", 48)
    win = run(c, mode="windowed", show_batch=1, show_rows_from=3)
    assert win.rows == (3, 6)
    _check_window(full, win, 1)


def test_small_budget_chooses_windowed_mode():
    c = cfg(seq=8)
    est = memory.estimate(c, host_copy=False)
    assert est.windowed_bytes < est.full_bytes
    trace = run(c, budget_bytes=est.windowed_bytes)
    assert trace.mode == "windowed"
    np.testing.assert_allclose(trace.output[0], run(c).output[0], **FP32)


# --- memory guard ----------------------------------------------------------

def test_memory_guard_raises_before_allocating(monkeypatch):
    def must_not_run(*_a, **_k):
        raise AssertionError("allocated before checking the budget")

    monkeypatch.setattr(weight_sources.RandomWeights, "weights", must_not_run)
    monkeypatch.setattr(weight_sources.RandomWeights, "inputs", must_not_run)
    big = MHAConfig(d_model=8192, n_heads=64, batch=64, seq=65_536, device="cpu")
    budget = 1 << 30
    with pytest.raises(MemoryBudgetError) as info:
        run(big, budget_bytes=budget)
    err = info.value
    assert isinstance(err, ConfigError) and err.field == "memory"
    assert err.needed > budget == err.budget
    assert format_bytes(err.needed) in err.message and format_bytes(budget) in err.message


def test_forcing_full_mode_over_budget_is_refused():
    c = cfg()
    est = memory.estimate(c, host_copy=False)
    with pytest.raises(MemoryBudgetError):
        run(c, mode="full", budget_bytes=est.full_bytes - 1)


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="mode"):
        run(cfg(), mode="fast")


# --- fully masked rows -----------------------------------------------------

def test_fully_masked_rows_give_zero_weights_not_nan():
    # bottom-right, T=5 > S=3: query i sees keys 0..i-2, so queries 0 and 1 see none
    c = cfg(seq=5, kv_seq=3, causal=True, causal_alignment="bottom-right")
    trace = run(c)
    np.testing.assert_array_equal(trace.masked_rows, [True, True, False, False, False])
    a = trace.tensors["softmax"]["weights"]
    assert np.isfinite(a).all() and np.isfinite(trace.output).all()
    np.testing.assert_array_equal(a[:, :, :2], 0.0)
    np.testing.assert_allclose(a[:, :, 2:].sum(-1), 1.0, atol=1e-6)
    # no context reaches a masked query, so its output is the output bias alone
    np.testing.assert_allclose(trace.output[:, :2], np.broadcast_to(trace.weights["b_O"], (3, 2, 16)),
                               **FP32)


# --- GPU (runs only where CUDA is present) ---------------------------------

@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu():
    c = cfg(n_heads=4, n_kv_heads=2, seq=6, kv_seq=4, causal=True)
    gpu, cpu = run(c.replace(device="cuda")), run(c)
    assert gpu.device == "cuda"
    # 1e-4: CUDA kernels sum in another order than the CPU's (TF32 is off by default)
    np.testing.assert_allclose(gpu.output, cpu.output, atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(gpu.tensors["softmax"]["weights"], cpu.tensors["softmax"]["weights"],
                               atol=1e-4, rtol=1e-4)
