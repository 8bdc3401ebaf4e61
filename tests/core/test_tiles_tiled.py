"""The tiled path equals the full computation, and its running m and l are right.

Reference: F.scaled_dot_product_attention with the same boolean mask (K and V
repeated per group for GQA/MQA), compared on rows that see at least one key.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from mha_explorer.core.engine.tiled import record_tiles, tiled_attention
from mha_explorer.core.plan.tiles import PARTIAL, SKIPPED, tile_counts
from mha_explorer.core.specs.masks import MaskSpec

ATOL = 1e-5  # fp32


def _inputs(seed, B, H, Hkv, T, S, dk):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, T, dk, generator=g)
    k = torch.randn(B, Hkv, S, dk, generator=g)
    v = torch.randn(B, Hkv, S, dk, generator=g)
    return q, k, v


def _reference(q, k, v, spec, T, S):
    visible = spec.visible(0, T, T, S)
    mask = None if visible is None else torch.from_numpy(visible)
    g = q.shape[1] // k.shape[1]
    out = F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                                         attn_mask=mask)  # [B, H, T, d_k]
    seen = np.ones(T, bool) if visible is None else visible.any(-1)
    return out, seen


@given(seed=st.integers(0, 2**16), B=st.integers(1, 2), Hkv=st.sampled_from([1, 2, 3]),
       group=st.sampled_from([1, 2, 4]), T=st.integers(1, 33), S=st.integers(1, 33),
       dk=st.sampled_from([1, 4, 8]), Br=st.integers(1, 10), Bc=st.integers(1, 10),
       causal=st.booleans(), alignment=st.sampled_from(["top-left", "bottom-right"]),
       window=st.one_of(st.none(), st.integers(1, 8)))
def test_tiled_equals_sdpa_for_random_configs(seed, B, Hkv, group, T, S, dk, Br, Bc, causal,
                                              alignment, window):
    spec = MaskSpec(causal, alignment, window)
    q, k, v = _inputs(seed, B, Hkv * group, Hkv, T, S, dk)
    out = tiled_attention(q, k, v, spec, (Br, Bc))
    ref, seen = _reference(q, k, v, spec, T, S)
    assert out.shape == ref.shape
    torch.testing.assert_close(out[:, :, seen], ref[:, :, seen], atol=ATOL, rtol=0)
    assert (out[:, :, ~seen] == 0).all()  # a row that sees no key gives 0, not NaN


def test_blocks_larger_than_the_sequence_are_one_tile():
    spec = MaskSpec(causal=True)
    q, k, v = _inputs(1, 1, 4, 2, 5, 5, 8)
    ref, _ = _reference(q, k, v, spec, 5, 5)
    torch.testing.assert_close(tiled_attention(q, k, v, spec, (64, 64)), ref, atol=ATOL, rtol=0)


def test_the_recorded_tiles_follow_the_online_softmax():
    T, S, dk, Br, Bc = 11, 14, 4, 4, 5
    spec = MaskSpec(True, "bottom-right")
    q, k, v = _inputs(7, 2, 4, 2, T, S, dk)
    batch, head = 1, 3  # head 3 reads kv head 1
    out, records = record_tiles(q, k, v, spec, (Br, Bc), batch=batch, head=head)
    scores = (q[batch, head] @ k[batch, 1].T) / math.sqrt(dk)  # [T, S]
    offset = S - T
    visible = np.arange(S)[None, :] <= np.arange(T)[:, None] + offset
    scores = scores.masked_fill(~torch.from_numpy(visible), -math.inf).numpy()
    assert len(records) == 3 * 3  # every tile is reported, skipped ones too
    total, computed, partial = tile_counts(spec, T, S, (Br, Bc))
    assert sum(r.state != SKIPPED for r in records) == computed
    assert sum(r.state == PARTIAL for r in records) == partial
    for r in records:
        (r0, r1), c1 = r.rows, r.cols[1]
        seen = scores[r0:r1, :c1]  # the keys visited so far for these rows
        m = seen.max(-1)
        np.testing.assert_allclose(r.m, m, atol=ATOL)
        with np.errstate(invalid="ignore"):
            l_expected = np.where(np.isinf(m), 0.0, np.exp(seen - m[:, None]).sum(-1))
        np.testing.assert_allclose(r.l, l_expected, rtol=1e-5, atol=ATOL)
    last = [r for r in records if r.col_block == 2]
    for r in last:  # after the last key block the rescaled output is the answer
        np.testing.assert_allclose(r.output, out[batch, head, r.rows[0]:r.rows[1]].numpy(), atol=ATOL)


def test_half_precision_inputs_accumulate_in_float32():
    q, k, v = _inputs(3, 1, 2, 2, 40, 40, 16)
    spec = MaskSpec(causal=True)
    ref, _ = _reference(q, k, v, spec, 40, 40)
    out = tiled_attention(q.bfloat16(), k.bfloat16(), v.bfloat16(), spec, (8, 8))
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), ref, atol=3e-2, rtol=0)
