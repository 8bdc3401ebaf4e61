"""√d_k in numbers: the spread and the softmax entropy with and without the
division, checked against torch's own softmax and std."""

from __future__ import annotations

import math

import numpy as np
import torch

from mha_explorer.core.display.scaling import scaling_numbers


def torch_entropy_bits(scores: torch.Tensor) -> float:
    p = torch.softmax(scores, dim=-1)
    rows = -(torch.special.xlogy(p, p)).sum(-1) / math.log(2)
    return float(rows[torch.isfinite(scores).any(-1)].mean())


def test_the_numbers_match_torch_for_a_real_layer():
    torch.manual_seed(0)
    d_k = 64
    q, k = torch.randn(4, 7, d_k), torch.randn(4, 9, d_k)  # [H, T, d_k], [H, S, d_k]
    raw = q @ k.transpose(-2, -1)  # [H, T, S]
    scaled = raw / math.sqrt(d_k)
    n = scaling_numbers(scaled.numpy(), d_k)
    assert math.isclose(n.raw_std, float(raw.std(unbiased=False)), rel_tol=1e-5)
    assert math.isclose(n.scaled_std, float(scaled.std(unbiased=False)), rel_tol=1e-5)
    assert math.isclose(n.entropy_scaled_bits, torch_entropy_bits(scaled), rel_tol=1e-5)
    assert math.isclose(n.entropy_raw_bits, torch_entropy_bits(raw), rel_tol=1e-4)
    assert math.isclose(n.uniform_bits, math.log2(9))
    # what the stage teaches: unit-spread q, k give raw scores about √d_k wide, and without
    # the division softmax is much sharper
    assert 0.7 * math.sqrt(d_k) < n.raw_std < 1.3 * math.sqrt(d_k)
    assert n.entropy_raw_bits < n.entropy_scaled_bits < n.uniform_bits


def test_masked_cells_and_empty_rows_are_left_out():
    scaled = np.array([[[1.0, -np.inf, 2.0], [-np.inf, -np.inf, -np.inf]]])  # [H=1, T=2, S=3]
    n = scaling_numbers(scaled, 4)
    assert math.isclose(n.scaled_std, 0.5) and math.isclose(n.raw_std, 1.0)
    assert math.isclose(n.uniform_bits, 1.0)  # the one row that sees keys sees two
    sentence = n.sentence()
    assert "-0.00" not in sentence and "÷√4" in sentence
    assert scaling_numbers(np.full((1, 2, 2), -np.inf), 4) is None
