"""Positions in torch: sinusoidal added to X, RoPE turning Q and K (rotate-half, as LLaMA).

The tables come from core/positions.py (float64 numpy), so the plot, the formula text
and what runs share one definition.
"""

from __future__ import annotations

import torch

from mha_explorer.core.specs.norms import RMS_EPS
from mha_explorer.core.specs.positions import ROPE_BASE, rope_angles, sinusoidal_table


def add_sinusoidal(x: torch.Tensor, start: int = 0) -> torch.Tensor:
    """x [nb, L, D] + PE[start : start + L] (positions counted from ``start``)."""
    L, D = x.shape[-2], x.shape[-1]
    table = torch.from_numpy(sinusoidal_table(start + L, D)[start:])  # [L, D]
    return x + table.to(x.device, x.dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """[a, b] -> [−b, a] along the last axis: the pair (a_i, b_i) turned by 90°."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_cos_sin(positions: torch.Tensor, dim: int, dtype: torch.dtype,
                 device: torch.device | str, base: float = ROPE_BASE) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin [P, dim] of the rotate-half angles for integer ``positions``."""
    angles = torch.from_numpy(rope_angles(positions.cpu().numpy(), dim, base))  # [P, dim] float64
    return angles.cos().to(device, dtype), angles.sin().to(device, dtype)


def apply_rope(x: torch.Tensor, positions: torch.Tensor, base: float = ROPE_BASE) -> torch.Tensor:
    """x [nb, heads, L, d] turned by its tokens' ``positions`` [L]; norms are unchanged."""
    # [L, d] each, broadcast over nb and heads
    cos, sin = rope_cos_sin(positions, x.shape[-1], x.dtype, x.device, base)
    return x * cos + rotate_half(x) * sin


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = RMS_EPS) -> torch.Tensor:
    """x / rms(x) · weight over the last axis (weight: the whole scale, as the checkpoints keep it)."""
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)


def query_key_positions(T: int, S: int, offset: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions of the T queries and S keys: query i sits at i + offset (0 top-left,
    S − T bottom-right, as MaskSpec.offset), key j at j."""
    return torch.arange(T) + offset, torch.arange(S)
