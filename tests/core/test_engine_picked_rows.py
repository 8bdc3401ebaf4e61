"""Rows mode: a picture of a long sequence computes only the query rows it shows, spread
over the sequence, and each of them equals the same row of the whole computation (the
engine's full mode, and torch's scaled_dot_product_attention for the output they give)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.display.head_maps import build_stage_maps, head_entropies
from mha_explorer.core.engine import runner
from mha_explorer.core.plan import memory
from mha_explorer.core.stages.catalog import StageId

CONFIGS = {
    "gqa causal": MHAConfig(d_model=32, n_heads=4, n_kv_heads=2, batch=2, seq=40, causal=True, device="cpu"),
    "mha window": MHAConfig(d_model=24, n_heads=3, batch=1, seq=37, causal=True, window=6, device="cpu"),
    "mqa cross": MHAConfig(d_model=16, n_heads=4, n_kv_heads=1, batch=1, seq=29, kv_seq=41, causal=True,
                           causal_alignment="bottom-right", device="cpu"),
    "rope": MHAConfig(d_model=32, n_heads=4, batch=1, seq=33, causal=True, positions="rope", device="cpu"),
}


@pytest.fixture
def few_rows(monkeypatch):
    monkeypatch.setattr(memory, "SHOWN_MAX_ROWS", 6)  # a picture of six rows, as for a long sequence


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_picked_rows_equal_the_same_rows_of_the_whole_computation(few_rows, name):
    cfg = CONFIGS[name]
    picked = runner.run(cfg, mode="rows", show_batch=cfg.batch - 1)
    whole = runner.run(cfg, mode="full")
    rows = list(picked.row_ids)
    assert len(rows) == 6 and rows[0] == 0 and rows[-1] == cfg.T - 1 and rows == sorted(set(rows))
    b = cfg.batch - 1
    for stage, name_ in ((StageId.scores, "scores"), (StageId.softmax, "weights")):
        got = picked.tensors[stage][name_][0]  # [H, 6, S]
        want = whole.tensors[stage][name_][b][:, rows]  # [H, 6, S]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # torch's SDPA as the reference: weights · V of the picked rows is its output there
    turned = StageId.rope if cfg.positions == "rope" else StageId.transpose  # Q and K as scored
    q = torch.from_numpy(whole.tensors[turned]["Q"][b:b + 1])  # [1, H, T, d_k]
    k = torch.from_numpy(whole.tensors[turned]["K"][b:b + 1])  # [1, Hkv, S, d_k]
    v = torch.from_numpy(whole.tensors[StageId.transpose]["V"][b:b + 1])  # [1, Hkv, S, d_k]
    visible = cfg.mask_spec.visible(0, cfg.T, cfg.T, cfg.S)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.from_numpy(visible),
                                         enable_gqa=cfg.Hkv != cfg.H)[0, :, rows]  # [H, 6, d_k]
    v_per_head = v[0].repeat_interleave(cfg.H // cfg.Hkv, 0)  # [H, S, d_k]
    mine = torch.from_numpy(picked.tensors[StageId.softmax]["weights"][0]) @ v_per_head  # [H, 6, d_k]
    torch.testing.assert_close(mine, ref, rtol=1e-5, atol=1e-5)


def test_the_picture_says_which_rows_and_its_statistics_are_over_them(few_rows):
    cfg = CONFIGS["gqa causal"]
    fractions: list[float] = []
    trace = runner.run(cfg, mode="rows", progress=fractions.append)
    assert fractions[-1] > 0.9  # progress is counted against the work rows mode does
    rows = trace.row_ids
    maps = build_stage_maps(trace, StageId.softmax, 0)
    assert "spread evenly, each exact" in maps.caption and f"{rows[-1]:,}" in maps.caption
    assert maps.row_labels == tuple(trace.tokens_q[r] for r in rows)
    assert any("6 of 40 query rows" in n for n in trace.notes)
    whole = runner.run(cfg, mode="full")
    w = whole.tensors[StageId.softmax]["weights"][0][:, list(rows)]  # [H, 6, S]
    mean_bits = [float(np.mean([-(r[r > 0] * np.log2(r[r > 0])).sum() for r in w[h]])) for h in range(cfg.H)]
    np.testing.assert_allclose(head_entropies(trace, 0), mean_bits, rtol=1e-4)
    # nothing after the softmax is claimed: those stages need every row
    assert trace.output is None
    assert build_stage_maps(trace, StageId.output, 0).empty_reason


def test_weights_too_faint_for_the_scale_point_to_stretching():
    # random weights over 40,000 keys: every weight tiny, one flat colour on 0 to 1
    trace = runner.run(MHAConfig(d_model=16, n_heads=2, batch=1, seq=40_000, device="cpu"), mode="rows")
    caption = build_stage_maps(trace, StageId.softmax, 0).caption
    largest = max(float(np.nanmax(m)) for m in trace.tensors[StageId.softmax]["weights"][0])
    assert largest < 0.05
    assert f"the largest weight shown is {largest:.2g}" in caption and "stretch colours" in caption
    stretched = build_stage_maps(trace, StageId.softmax, 0, stretch_weights=True).caption
    assert "too faint" not in stretched
    short = runner.run(MHAConfig(d_model=16, n_heads=2, batch=1, seq=4, device="cpu"))
    assert "too faint" not in build_stage_maps(short, StageId.softmax, 0).caption  # 4 keys: visible
