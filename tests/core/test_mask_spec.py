"""The mask spec's blocks of rows and its visible-cell count agree with the rule
written out cell by cell, and the plan reports the count without a T×S array."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.specs.masks import MaskSpec


def written_out(spec: MaskSpec, T: int, S: int) -> np.ndarray:
    ok = np.ones((T, S), dtype=bool)
    for i, j in itertools.product(range(T), range(S)):
        p = i + spec.offset(T, S)  # the query's position
        d = p - j
        seen = True
        if spec.window is not None:
            seen &= (d < spec.window) if spec.causal else abs(d) < spec.window
        if spec.stride is not None:
            seen &= d % spec.stride == 0
        g = spec.global_tokens  # widens a window or stride pattern
        if g and spec.sparse and (0 <= p < g or j < g):
            seen = True
        if spec.causal:
            seen &= d >= 0  # last: a global token never opens the future
        ok[i, j] = seen
    return ok


SPECS = [MaskSpec(c, a, w, s, g) for c, a, w, s, g in itertools.product(
    [False, True], ["top-left", "bottom-right"], [None, 1, 3], [None, 2], [0, 2])]


@pytest.mark.parametrize("spec", SPECS, ids=repr)
@pytest.mark.parametrize("T,S", [(5, 5), (4, 7), (7, 3)])
def test_blocks_and_counts_follow_the_rule(spec, T, S):
    want = written_out(spec, T, S)
    got = np.concatenate([spec.visible(r0, min(T, r0 + 2), T, S) if spec.masks_anything
                          else np.ones((min(T, r0 + 2) - r0, S), bool) for r0 in range(0, T, 2)])
    if spec.masks_anything:
        np.testing.assert_array_equal(got, want)
    assert spec.visible_count(T, S) == int(want.sum())


def test_the_plan_counts_visible_cells_at_a_million_tokens_instantly():
    c = MHAConfig(d_model=64, n_heads=1, seq=1_048_576, causal=True)
    notes = build_plan(c).stage("scores").notes
    T = c.T
    assert any(f"{T * (T + 1) // 2:,} of {T * T:,}" in n for n in notes), notes
    assert any("causal" in n for n in notes)
