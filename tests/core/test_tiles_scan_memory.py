"""Counting the tiles of a strided or global-token mask holds megabytes, not the whole grid:
1×1 tiles over thousands of keys are millions of states, counted group by group."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.tiles import tile_counts, tile_plan
from mha_explorer.core.specs.masks import MaskSpec

SCAN_BYTES_MAX = 32 << 20  # the grid below as int64 rows alone is 128 MiB


def brute_force(spec: MaskSpec, T: int, S: int, Br: int, Bc: int) -> tuple[int, int, int, int]:
    """(total, computed, partial, cells in computed tiles) from the whole mask, tile by tile."""
    vis = spec.visible(0, T, T, S)
    total = computed = partial = cells = 0
    for r0 in range(0, T, Br):
        for c0 in range(0, S, Bc):
            tile = vis[r0:r0 + Br, c0:c0 + Bc]
            total += 1
            if tile.any():
                computed += 1
                partial += int(not tile.all())
                cells += tile.size
    return total, computed, partial, cells


def test_a_grid_of_millions_of_tiles_is_counted_in_megabytes():
    spec = MaskSpec(causal=True, stride=2)
    tracemalloc.start()
    try:
        total, computed, partial = tile_counts(spec, 4096, 4096, (1, 1))
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == 4096 * 4096 and partial == 0
    assert computed == sum(i // 2 + 1 for i in range(4096))  # row i sees keys i, i-2, ..., as the mask says
    assert peak < SCAN_BYTES_MAX, f"{peak / 2**20:.0f} MiB held while counting"


@pytest.mark.parametrize("spec,T,S,block", [
    (MaskSpec(causal=True, stride=3), 37, 37, (4, 5)),
    (MaskSpec(causal=True, stride=2, global_tokens=2), 23, 29, (3, 7)),
    (MaskSpec(causal=False, window=4, stride=2), 19, 19, (1, 1)),
    (MaskSpec(causal=True, stride=2), 50, 50, (64, 3)),
])
def test_scanned_counts_equal_the_whole_mask_tile_by_tile(spec, T, S, block):
    total, computed, partial, cells = brute_force(spec, T, S, *block)
    assert tile_counts(spec, T, S, block) == (total, computed, partial)
    fractions: list[float] = []
    cfg = MHAConfig(d_model=16, n_heads=2, batch=1, seq=T, kv_seq=S if S != T else None,
                    causal=spec.causal, device="cpu")
    cfg = cfg.replace(**{k: v for k, v in (("stride", spec.stride), ("window", spec.window),
                                           ("global_tokens", spec.global_tokens)) if v})
    if cfg.mask_spec != spec:
        pytest.skip("this mask is not one a config makes")
    plan = tile_plan(cfg, block, progress=fractions.append)
    assert (plan.blocks_total, plan.blocks_computed, plan.blocks_partial) == (total, computed, partial)
    assert plan.flops_tiled == cfg.batch * cfg.H * cells * (plan.flops // (cfg.batch * cfg.H * T * S))
    assert fractions and fractions[-1] == 1.0 and np.all(np.diff(fractions) > 0)
