"""Masks: the patterns the papers describe, counted without building them, and equal to
torch's own masked attention.

``allowed`` below restates each rule for one (query, key) pair in words a reader can
check against the papers; MaskSpec builds whole row blocks with numpy, mask_plan
counts them in closed form, and both are compared with it cell by cell.
"""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.config.rules import check_mask
from mha_explorer.core.kernels.masks import attend, visible_block
from mha_explorer.core.plan.masks import skipped_flops
from mha_explorer.core.specs.mask_counts import cached_tokens, mask_counts, row_counts
from mha_explorer.core.specs.masks import MaskSpec


def allowed(spec: MaskSpec, i: int, j: int, T: int, S: int) -> bool:
    p = i + (S - T if spec.alignment == "bottom-right" else 0)  # the query's position
    if spec.causal and j > p:
        return False  # never a later key, whatever else holds
    g = spec.global_tokens if (spec.window or spec.stride) else 0
    if 0 <= p < g or j < g:
        return True  # global tokens see and are seen by everyone
    if spec.window is not None:
        near = (p - spec.window < j) if spec.causal else (abs(p - j) < spec.window)
        if not near:
            return False
    return spec.stride is None or (p - j) % spec.stride == 0


specs = st.builds(
    MaskSpec, causal=st.booleans(), alignment=st.sampled_from(["top-left", "bottom-right"]),
    window=st.none() | st.integers(1, 9), stride=st.none() | st.integers(1, 4),
    global_tokens=st.integers(0, 3),
)


@given(spec=specs, T=st.integers(1, 9), S=st.integers(1, 9))
def test_visible_and_counts_agree_with_the_rules_cell_by_cell(spec, T, S):
    brute = [[allowed(spec, i, j, T, S) for j in range(S)] for i in range(T)]
    block = spec.visible(0, T, T, S)
    got = [[True] * S for _ in range(T)] if block is None else block.tolist()
    assert got == brute
    assert row_counts(spec, T, S).tolist() == [sum(r) for r in brute]
    counts = mask_counts(spec, T, S)
    assert counts.visible == sum(map(sum, brute)) and counts.masked == T * S - counts.visible
    assert counts.empty_rows == sum(1 for r in brute if not any(r))


def test_a_block_of_rows_is_the_same_rows_of_the_whole():
    spec = MaskSpec(True, "bottom-right", 3, 2, 1)
    whole = spec.visible(0, 10, 10, 12)
    assert (spec.visible(4, 7, 10, 12) == whole[4:7]).all()


def test_mistral_window_row_by_row():
    # causal window 3 over 6 tokens: query 4 sees keys 2, 3, 4 only
    rows = MaskSpec(causal=True, window=3).visible(0, 6, 6, 6)
    assert [list(map(int, r)) for r in rows[3:5]] == [[0, 1, 1, 1, 0, 0], [0, 0, 1, 1, 1, 0]]
    assert mask_counts(MaskSpec(causal=True, window=3), 6, 6).visible == 1 + 2 + 3 + 3 + 3 + 3


def test_counts_for_a_long_sequence_in_closed_form():
    # T = S = 100,000, causal window 4,096: rows 0..4095 see 1..4096 keys, the rest 4,096 each
    T, W = 100_000, 4_096
    expected = W * (W + 1) // 2 + (T - W) * W
    assert mask_counts(MaskSpec(causal=True, window=W), T, T).visible == expected


@pytest.mark.parametrize("spec", [
    MaskSpec(causal=True, window=3), MaskSpec(window=2, stride=2), MaskSpec(causal=True, stride=3),
    MaskSpec(causal=True, window=2, global_tokens=2), MaskSpec(causal=True, alignment="bottom-right"),
], ids=["window", "dilated", "strided", "local+global", "bottom-right"])
def test_attention_over_the_mask_equals_torch_sdpa(spec):
    g = torch.Generator().manual_seed(0)
    T, S = 7, 9 if spec.alignment == "bottom-right" else 7
    q = torch.randn(2, 3, T, 8, generator=g, dtype=torch.float64)
    k, v = torch.randn(2, 2, 3, S, 8, generator=g, dtype=torch.float64)
    vis = visible_block(spec, 0, T, T, S)
    _, _, ctx = attend(q, k, v, 1 / 8 ** 0.5, vis)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=vis)
    torch.testing.assert_close(ctx, expected)


def test_a_row_that_sees_nothing_gets_zero_weights_not_nan():
    spec = MaskSpec(causal=True, alignment="bottom-right")  # T 4 > S 2: rows 0, 1 see nothing
    q = torch.randn(1, 1, 4, 4)
    kv = torch.randn(1, 1, 2, 4)
    _, weights, ctx = attend(q, kv, kv, 0.5, visible_block(spec, 0, 4, 4, 2))
    assert not torch.isnan(ctx).any() and weights[0, 0, :2].sum() == 0
    assert mask_counts(spec, 4, 2).empty_rows == 2


def test_skipped_flops_written_out():
    # B 2, H 4, T = S = 8, causal: 8·9/2 = 36 visible of 64 cells, 28 masked per head
    cfg = MHAConfig(d_model=32, n_heads=4, batch=2, seq=8, causal=True)
    skipped = skipped_flops(cfg, qk_width=8, v_width=8)
    masked = 2 * 4 * 28
    assert skipped == {"scores": masked * (2 * 8 + 1), "softmax": masked * 5, "weighted_sum": masked * 2 * 8,
                       "total": masked * (17 + 5 + 16)}


@pytest.mark.parametrize("causal, window, globals_, S, expected", [
    (True, None, 0, 1000, 1000),  # no window: every key stays
    (True, 4096, 0, 1000, 1000),  # window longer than the text
    (True, 256, 0, 1000, 256),  # a rolling cache of W keys
    (True, 256, 4, 1000, 260),  # plus the global tokens
    (False, 256, 0, 1000, 511),  # both sides: 2·256 − 1
])
def test_rolling_cache_is_bounded_by_the_window(causal, window, globals_, S, expected):
    assert cached_tokens(MaskSpec(causal, "top-left", window, None, globals_), S) == expected


def test_the_cache_bound_is_the_widest_row():
    for W, g in itertools.product((1, 3, 5), (0, 2)):
        spec = MaskSpec(True, "top-left", W, None, g)
        assert mask_counts(spec, 40, 40).widest_row <= cached_tokens(spec, 40)


def _unvalidated(**kw) -> MHAConfig:
    cfg = object.__new__(MHAConfig)
    object.__setattr__(cfg, "__dict__", dict(MHAConfig().__dict__, **kw))
    return cfg


def test_more_global_tokens_than_tokens_is_refused():
    with pytest.raises(ConfigError) as info:
        check_mask(_unvalidated(seq=8, window=2, global_tokens=9))
    assert info.value.field == "global_tokens" and info.value.suggestions == [{"global_tokens": 8}]


def test_global_tokens_without_a_window_or_stride_are_refused():
    with pytest.raises(ConfigError) as info:
        check_mask(_unvalidated(seq=8, global_tokens=2))
    assert info.value.field == "global_tokens" and {"global_tokens": 0} in info.value.suggestions
    check_mask(_unvalidated(seq=8, global_tokens=2, stride=2))


def test_skipped_flops_use_the_latent_head_widths_under_mla():
    # MLA d_k 8 -> nope 8 + rope 4 = 12 for scores, v 8 for the weighted sum
    cfg = MHAConfig(d_model=32, n_heads=4, batch=2, seq=8, causal=True, mla=True)
    assert skipped_flops(cfg) == skipped_flops(cfg, qk_width=12, v_width=8)
    assert skipped_flops(cfg)["scores"] == 2 * 4 * 28 * (2 * 12 + 1)
