"""Tile counts, peak memory and FLOPs of the tiled path, against arithmetic.

The brute-force counter below walks every tile and every (row, key) cell in it
with the mask written out from its definition: query i (aligned to key i + o,
o = 0 top-left, S - T bottom-right) sees key j when j <= i + o (causal) and
i + o - j < W (window).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.plan.tiles import (
    FULL,
    PARTIAL,
    SKIPPED,
    parse_block,
    tile_counts,
    tile_mask,
    tile_plan,
    tile_states,
)
from mha_explorer.core.specs.masks import MaskSpec


def sees(i, j, T, S, causal, alignment, window):
    a = i + (S - T if alignment == "bottom-right" else 0)
    if causal and j > a:
        return False
    if window is not None:
        return (a - j < window) if causal else abs(a - j) < window
    return True


def brute_states(T, S, Br, Bc, causal, alignment, window):
    grid = []
    for r0 in range(0, T, Br):
        row = []
        for c0 in range(0, S, Bc):
            cells = [sees(i, j, T, S, causal, alignment, window)
                     for i in range(r0, min(r0 + Br, T)) for j in range(c0, min(c0 + Bc, S))]
            row.append(FULL if all(cells) else PARTIAL if any(cells) else SKIPPED)
        grid.append(row)
    return np.array(grid, dtype=np.int8)


def test_square_causal_grid_computes_the_lower_triangle_of_tiles():
    # T = S = 4 blocks of 16: the diagonal tiles are cut, those above it skipped
    total, computed, partial = tile_counts(MaskSpec(causal=True), 64, 64, (16, 16))
    assert (total, computed, partial) == (16, 4 * 5 // 2, 4)


def test_bottom_right_alignment_shifts_the_diagonal():
    # T 4, S 8, one-row one-key tiles: query i sees keys 0..i+4
    total, computed, partial = tile_counts(MaskSpec(True, "bottom-right"), 4, 8, (1, 1))
    assert total == 32
    assert computed == 5 + 6 + 7 + 8
    assert partial == 0  # a 1×1 tile is either seen or not
    top_left = tile_counts(MaskSpec(True, "top-left"), 4, 8, (1, 1))
    assert top_left[1] == 1 + 2 + 3 + 4


def test_blocks_that_do_not_divide_count_the_short_edge_tiles():
    # T 10 in blocks of 4 (4, 4, 2), S 7 in blocks of 3 (3, 3, 1): 3 × 3 tiles
    states = tile_states(MaskSpec(causal=True), 10, 7, (4, 3))
    assert states.shape == (3, 3)
    expected = brute_states(10, 7, 4, 3, True, "top-left", None)
    np.testing.assert_array_equal(states, expected)


@given(T=st.integers(1, 40), S=st.integers(1, 40), Br=st.integers(1, 12), Bc=st.integers(1, 12),
       causal=st.booleans(), alignment=st.sampled_from(["top-left", "bottom-right"]),
       window=st.one_of(st.none(), st.integers(1, 12)))
def test_states_and_counts_match_the_brute_force_walk(T, S, Br, Bc, causal, alignment, window):
    spec = MaskSpec(causal, alignment, window)
    expected = brute_states(T, S, Br, Bc, causal, alignment, window)
    np.testing.assert_array_equal(tile_states(spec, T, S, (Br, Bc)), expected)
    assert tile_counts(spec, T, S, (Br, Bc)) == (
        expected.size, int((expected != SKIPPED).sum()), int((expected == PARTIAL).sum()))


@given(T=st.integers(1, 20), S=st.integers(1, 20), r=st.integers(0, 19), c=st.integers(0, 19),
       causal=st.booleans(), window=st.one_of(st.none(), st.integers(1, 6)),
       stride=st.one_of(st.none(), st.integers(1, 4)), global_tokens=st.integers(0, 3))
def test_a_tile_mask_is_the_slice_of_the_row_block_mask(T, S, r, c, causal, window, stride, global_tokens):
    spec = MaskSpec(causal, "bottom-right", window, stride, global_tokens)
    r0, c0 = min(r, T - 1), min(c, S - 1)
    r1, c1 = min(r0 + 5, T), min(c0 + 4, S)
    rows = spec.visible(r0, r1, T, S)
    tile = tile_mask(spec, r0, r1, c0, c1, T, S)
    if rows is None:
        assert tile is None
    else:
        np.testing.assert_array_equal(tile, rows[:, c0:c1])


def test_strided_masks_are_counted_by_scanning():
    spec = MaskSpec(causal=True, stride=3)
    total, computed, partial = tile_counts(spec, 12, 12, (3, 3))
    # every tile on or below the diagonal holds a key at a distance that is a multiple of 3
    assert (total, computed) == (16, 10)
    assert partial == 10  # a stride never fills a whole 3×3 tile


def test_peak_memory_is_linear_in_t_while_the_full_matrix_is_quadratic():
    cfg = MHAConfig(d_model=4096, n_heads=32, batch=1, seq=16384, causal=True)
    plan = tile_plan(cfg, (128, 128))
    B, H, T, dk, e = 1, 32, 16384, 128, 4
    assert plan.full_matrix_bytes == B * H * T * T * e  # 32 GiB
    io = 4 * B * H * T * dk * e  # Q, K, V and O
    tiles = 2 * B * H * 128 * dk * e + 2 * B * H * 128 * e + 2 * B * H * 128 * 128 * e + 128 * 128
    assert plan.peak_bytes == io + tiles
    doubled = tile_plan(cfg.replace(seq=2 * 16384), (128, 128))
    assert doubled.full_matrix_bytes == 4 * plan.full_matrix_bytes
    assert doubled.peak_bytes - tiles == 2 * io
    assert plan.blocks_total == 128 * 128 and plan.blocks_computed == 128 * 129 // 2


def test_flops_are_the_same_either_way_without_a_mask_and_fewer_with_skipped_tiles():
    cfg = MHAConfig(d_model=64, n_heads=4, batch=2, seq=30, kv_seq=50)
    plan = tile_plan(cfg, (7, 9))
    cell = 2 * 16 + 1 + 5 + 2 * 16  # q·k, scale, softmax, p·v per (query, key) cell
    assert plan.flops == plan.flops_tiled == 2 * 4 * 30 * 50 * cell
    causal = tile_plan(cfg.replace(causal=True), (7, 9))
    states = brute_states(30, 50, 7, 9, True, "top-left", None)
    rows = np.minimum(7, 30 - np.arange(states.shape[0]) * 7)[:, None]
    cols = np.minimum(9, 50 - np.arange(states.shape[1]) * 9)[None, :]
    assert causal.flops_tiled == 2 * 4 * int(((states != SKIPPED) * rows * cols).sum()) * cell


@pytest.mark.parametrize("text", ["0,4", "4,0", "-1", "a,b", "1,2,3", ""])
def test_bad_blocks_are_refused(text):
    with pytest.raises(ValueError):
        parse_block(text)


def test_a_single_number_is_a_square_block():
    assert parse_block("32") == (32, 32)
    assert parse_block(" 16 , 8 ") == (16, 8)


def test_too_many_tiles_to_draw_is_a_config_error():
    with pytest.raises(ConfigError):
        tile_states(MaskSpec(causal=True), 1 << 20, 1 << 20, (1, 1))
