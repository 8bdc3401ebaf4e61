"""Windowed mode: the rows the heatmaps show are exact.

The engine streams one batch element and one block of query rows at a time and
keeps only the shown window; here that window is recomputed directly from the
trace's weights and the inputs, with no blocks, and compared.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.engine import runner as engine
from mha_explorer.core.engine.weights import RandomWeights
from mha_explorer.core.plan.memory import chunk_rows, shown_rows

ATOL = 1e-5  # fp32, as DESIGN.md
RTOL = 1e-4  # the blocked and the direct matmuls sum in different orders

CONFIGS = {
    # the window is exactly one compute block
    "one block": MHAConfig(d_model=64, n_heads=4, batch=2, seq=1024),
    # the window spans two compute blocks (shown 256 rows, blocks of 128)
    "spans blocks, causal GQA": MHAConfig(d_model=64, n_heads=16, n_kv_heads=4, batch=2,
                                          seq=2048, causal=True),
    # cross-attention, bottom-right causal: the window sits mid-sequence
    "cross, bottom-right": MHAConfig(d_model=32, n_heads=8, batch=3, seq=1024, kv_seq=1536,
                                     causal=True, causal_alignment="bottom-right"),
}


def direct_rows(trace, b: int, rows: tuple[int, int]) -> dict[str, np.ndarray]:
    """Scores, weights and context for query rows ``rows`` of batch element b, unblocked."""
    cfg = trace.config
    w = {k: torch.from_numpy(v).double() for k, v in trace.weights.items()}
    x, xkv = (t[0].double() for t in RandomWeights(cfg).inputs(cfg, range(b, b + 1), "cpu", torch.float32))
    bias = cfg.bias
    q = x @ w["W_Q"].T + (w["b_Q"] if bias else 0)  # [T, D]
    k = xkv @ w["W_K"].T + (w["b_K"] if bias else 0)  # [S, Hkv*d_k]
    v = xkv @ w["W_V"].T + (w["b_V"] if bias else 0)  # [S, Hkv*d_k]
    H, Hkv, dk = cfg.H, cfg.Hkv, cfg.d_k
    r0, r1 = rows
    qh = q[r0:r1].view(r1 - r0, H, dk).transpose(0, 1)  # [H, r, d_k]
    reads = [cfg.kv_head_of(h) for h in range(H)]  # GQA: the kv head each query head reads
    kh = k.view(cfg.S, Hkv, dk).transpose(0, 1)[reads]  # [H, S, d_k]
    vh = v.view(cfg.S, Hkv, dk).transpose(0, 1)[reads]  # [H, S, d_k]
    scores = qh @ kh.transpose(1, 2) / math.sqrt(dk)  # [H, r, S]
    allowed = cfg.mask_spec.visible(r0, r1, cfg.T, cfg.S)  # [r, S]
    if allowed is not None:
        scores = scores.masked_fill(~torch.from_numpy(allowed), float("-inf"))
    weights = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)  # masked rows -> 0
    return {"scores": scores.numpy(), "weights": weights.numpy(),
            "context": (weights @ vh).numpy(), "X": x.numpy()}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_shown_rows_equal_a_direct_computation(name):
    cfg = CONFIGS[name]
    shown = shown_rows(cfg)
    start = (cfg.T - shown) // 2 + 3  # mid-sequence, off any block edge
    trace = engine.run(cfg, mode="windowed", show_batch=1, show_rows_from=start)

    assert trace.mode == "windowed" and trace.batch_index == 1
    assert trace.rows == (start, start + shown)
    if name == "spans blocks, causal GQA":
        assert shown > chunk_rows(cfg) and start % chunk_rows(cfg)  # really straddles edges

    want = direct_rows(trace, 1, trace.rows)
    got_scores = trace.tensors["scores"]["scores"]
    got_weights = trace.tensors["softmax"]["weights"]
    assert got_scores.shape == got_weights.shape == (1, cfg.H, shown, cfg.S)
    np.testing.assert_array_equal(np.isneginf(got_scores[0]), np.isneginf(want["scores"]))
    finite = np.isfinite(want["scores"])
    np.testing.assert_allclose(got_scores[0][finite], want["scores"][finite], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(got_weights[0], want["weights"], rtol=RTOL, atol=ATOL)
    context = trace.tensors["weighted_sum"]["context"][0, :, start:start + shown]
    np.testing.assert_allclose(context, want["context"], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(trace.tensors["input"]["X"][0], want["X"], rtol=0, atol=0)


def test_window_is_clamped_to_the_last_rows():
    cfg = CONFIGS["one block"]
    trace = engine.run(cfg, mode="windowed", show_batch=0, show_rows_from=cfg.T + 50)
    shown = shown_rows(cfg)
    assert trace.rows == (cfg.T - shown, cfg.T)
    want = direct_rows(trace, 0, trace.rows)
    np.testing.assert_allclose(trace.tensors["softmax"]["weights"][0], want["weights"],
                               rtol=RTOL, atol=ATOL)


def test_windowed_keeps_one_element_but_computes_all():
    cfg = CONFIGS["one block"]
    trace = engine.run(cfg, mode="windowed", show_batch=1)
    assert trace.tensors["input"]["X"].shape == (1, cfg.T, cfg.d_model)
    with pytest.raises(IndexError):
        trace.batch_slot(0)
    assert len(trace.output_norms) == cfg.batch
    # element 0 was computed too: a run that keeps it reports the same norms
    reference = engine.run(cfg, mode="windowed", show_batch=0)
    np.testing.assert_allclose(trace.output_norms, reference.output_norms, rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(reference.output[0]), trace.output_norms[0],
                               rtol=1e-5)
