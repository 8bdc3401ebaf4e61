"""The tiles tab's sentence: the tiled peak against the full matrix, worked out from the plan."""

from __future__ import annotations

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.display.tile_words import crossing_length, peak_words
from mha_explorer.core.plan.tiles import tile_plan
from mha_explorer.core.units import format_bytes

BLOCK = (4, 4)


def test_the_crossing_is_where_the_full_matrix_first_outweighs_the_tiles():
    cfg = MHAConfig(d_model=64, n_heads=4, batch=1, seq=16, causal=True)
    t = crossing_length(cfg, BLOCK)
    at, before = tile_plan(cfg.replace(seq=t), BLOCK), tile_plan(cfg.replace(seq=t - 1), BLOCK)
    assert at.full_matrix_bytes > at.peak_bytes
    assert before.full_matrix_bytes <= before.peak_bytes


def test_short_and_long_sequences_are_told_apart_with_the_plan_s_numbers():
    short = MHAConfig(d_model=64, n_heads=4, batch=1, seq=16)
    plan = tile_plan(short, BLOCK)
    words = peak_words(short, BLOCK)
    assert f"tiled peak ({format_bytes(plan.peak_bytes)}) is larger" in words
    assert f"from T = {crossing_length(short, BLOCK):,}" in words
    long = short.replace(seq=4096)
    plan = tile_plan(long, BLOCK)
    assert f"full matrix ({format_bytes(plan.full_matrix_bytes)}) outweighs" in peak_words(long, BLOCK)
