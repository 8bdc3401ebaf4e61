"""Positions: RoPE as a rotation (rotate-half layout), sinusoidal as the 2017 formula.

The references are other formulations of the same thing: RoPE as multiplication by
e^(i·p·θ) of complex numbers (a_k + i·b_k) built from the two halves, and the
sinusoidal table written entry by entry from the paper's formula.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.kernels.positions import add_sinusoidal, apply_rope, rotate_half
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.specs.positions import (
    rope_distance_curve,
    rope_frequencies,
    rope_score_at,
    sinusoidal_table,
)
from mha_explorer.core.variants.grouped import GROUPED
from mha_explorer.core.variants.registry import family_of


def complex_rope(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """x [..., L, d] as d/2 complex numbers (first half real, second half imaginary), each
    multiplied by e^(i·p·θ_k), θ_k = 10000^(−2k/d)."""
    d = x.shape[-1]
    z = torch.complex(x[..., : d // 2], x[..., d // 2:])
    theta = torch.tensor([10000.0 ** (-2 * k / d) for k in range(d // 2)], dtype=torch.float64)
    turn = torch.polar(torch.ones(len(positions), d // 2, dtype=torch.float64),
                       positions.double()[:, None] * theta)  # [L, d/2]
    w = z * turn
    return torch.cat([w.real, w.imag], dim=-1)


def test_rope_equals_complex_rotation():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 7, 16, generator=g, dtype=torch.float64)  # [B, H, T, d]
    pos = torch.arange(7) + 5
    torch.testing.assert_close(apply_rope(x, pos), complex_rope(x, pos))


def test_rotate_half_swaps_halves_with_a_sign():
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert rotate_half(x).tolist() == [-3.0, -4.0, 1.0, 2.0]


def test_rope_keeps_every_vector_length():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1, 4, 9, 8, generator=g, dtype=torch.float64)
    y = apply_rope(x, torch.arange(9) * 1000)
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))


def test_position_zero_is_left_alone():
    x = torch.randn(1, 1, 1, 6, dtype=torch.float64)
    torch.testing.assert_close(apply_rope(x, torch.tensor([0])), x)


@given(m=st.integers(-500, 500), n=st.integers(-500, 500), shift=st.integers(-10_000, 10_000),
       seed=st.integers(0, 2**16), half=st.integers(1, 16))
def test_rope_score_depends_only_on_relative_distance(m, n, shift, seed, half):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 1, 1, 1, 2 * half, generator=g, dtype=torch.float64)
    score = (apply_rope(q, torch.tensor([m])) * apply_rope(k, torch.tensor([n]))).sum()
    moved = (apply_rope(q, torch.tensor([m + shift])) * apply_rope(k, torch.tensor([n + shift]))).sum()
    assert math.isclose(float(score), float(moved), rel_tol=1e-7, abs_tol=1e-7)
    # and the closed form the plot uses gives the same number
    closed = rope_score_at(q.flatten().numpy(), k.flatten().numpy(), np.array([m - n]))[0]
    assert math.isclose(float(score), closed, rel_tol=1e-7, abs_tol=1e-7)


def test_distance_curve_starts_at_q_dot_k_and_falls_off():
    distances, curve = rope_distance_curve(64, 200)
    assert distances[0] == 0 and curve[0] == pytest.approx(64.0)  # ones·ones, nothing turned
    assert curve[1:].max() < curve[0]  # any turn lowers the score of two equal vectors
    assert curve[100:].mean() < 0.6 * curve[0]  # far tokens score well below near ones, on average


def test_frequencies_are_the_papers():
    np.testing.assert_allclose(rope_frequencies(8), [1.0, 10000 ** -0.25, 10000 ** -0.5, 10000 ** -0.75])
    with pytest.raises(ValueError):
        rope_frequencies(7)


@pytest.mark.parametrize("width", [6, 7])
def test_sinusoidal_table_entry_by_entry(width):
    table = sinusoidal_table(5, width)
    for p in range(5):
        for c in range(width):
            i = c // 2
            angle = p / 10000 ** (2 * i / width)
            assert table[p, c] == pytest.approx(math.sin(angle) if c % 2 == 0 else math.cos(angle))


def test_sinusoidal_is_added_to_x_so_equal_words_differ():
    x = torch.ones(1, 3, 8, dtype=torch.float64)  # the same word three times
    y = add_sinusoidal(x)
    torch.testing.assert_close(y - x, torch.from_numpy(sinusoidal_table(3, 8))[None])
    assert not torch.equal(y[0, 0], y[0, 1])


def rope_width(cfg: MHAConfig) -> int:
    return family_of(cfg).rope_width(cfg)


def test_rope_width_is_d_k_or_mla_rope_part():
    assert rope_width(MHAConfig(d_model=64, n_heads=4)) == 16
    assert rope_width(MHAConfig(d_model=64, n_heads=4, mla=True, qk_rope_head_dim=6)) == 6


def test_rope_with_an_odd_head_width_is_refused_with_fixes():
    cfg = object.__new__(MHAConfig)
    object.__setattr__(cfg, "__dict__", dict(MHAConfig().__dict__, d_model=15, n_heads=5, positions="rope"))
    with pytest.raises(ConfigError) as info:
        GROUPED.check(cfg, owned=True)
    assert info.value.field == "positions" and "d_k = 3" in info.value.message
    assert {"positions": "sinusoidal"} in info.value.suggestions
    GROUPED.check(MHAConfig(d_model=16, n_heads=4, positions="rope"), owned=True)
    with pytest.raises(ConfigError, match="d_k = 3"):  # and the config itself refuses it
        MHAConfig(d_model=15, n_heads=5, positions="rope")


def _stage(cfg: MHAConfig, stage: str):
    plan = build_plan(cfg)
    return plan.stage(stage) if plan.has_stage(stage) else None


def rope_stage(cfg: MHAConfig):
    return _stage(cfg, "rope")


def sinusoidal_stage(cfg: MHAConfig):
    return _stage(cfg, "positions")


def test_rope_stage_shapes_and_flops_written_out():
    # B 2, T = S = 5, H 4, Hkv 2, d_k 8: Q 2·4·5·8 = 320 and K 2·2·5·8 = 160 numbers, 3 FLOPs each
    stage = rope_stage(MHAConfig(d_model=32, n_heads=4, n_kv_heads=2, seq=5, positions="rope"))
    assert [t.shape for t in stage.tensors] == [(2, 4, 5, 8), (2, 2, 5, 8)]
    assert stage.flops == 3 * (320 + 160)
    assert rope_stage(MHAConfig(positions="sinusoidal")) is None
    latent = rope_stage(MHAConfig(d_model=32, n_heads=4, positions="rope", mla=True))
    assert [t.name for t in latent.tensors] == ["q_rope", "k_rope"]  # only the decoupled parts turn


def test_sinusoidal_stage_adds_one_table_to_each_sequence():
    stage = sinusoidal_stage(MHAConfig(d_model=16, n_heads=2, seq=3, kv_seq=4, positions="sinusoidal"))
    assert [t.name for t in stage.tensors] == ["PE", "X", "X_kv"]
    assert stage.flops == 2 * 3 * 16 + 2 * 4 * 16  # one add per number of X and X_kv
    assert sinusoidal_stage(MHAConfig()) is None
