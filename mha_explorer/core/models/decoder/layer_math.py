"""The arithmetic inside a decoder layer, apart from its weights: RMSNorm, the RoPE tables and
rotation (half-split pairs), and which keys a query may see (causal, and a sliding window on
local layers)."""

from __future__ import annotations

import torch


def rms_norm(x: torch.Tensor, scale: torch.Tensor, eps: float) -> torch.Tensor:
    """x / rms(x) · scale over the last axis (float32)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * scale


def rms_scale(x: torch.Tensor, scale: torch.Tensor, eps: float) -> torch.Tensor:
    """The multiplier m with rms_norm(x) == x · m: scale / rms(x), [..., D] for x [..., D]."""
    return torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * scale


def rope_tables(positions: torch.Tensor, base: float, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin [T, dim] for the half-split rotation (pairs i and i + dim/2)."""
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))  # [dim/2]
    angles = positions.to(torch.float32)[:, None] * inv_freq[None, :]  # [T, dim/2]
    angles = torch.cat([angles, angles], dim=-1)  # [T, dim]
    return angles.cos(), angles.sin()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """RoPE on x [..., T, dim]: (x1, x2) -> (x1 cos − x2 sin, x2 cos + x1 sin)."""
    half = x.shape[-1] // 2
    turned = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + turned * sin


def attention_mask(q_positions: torch.Tensor, k_positions: torch.Tensor, window: int | None) -> torch.Tensor:
    """[Tq, Tk] True where a query may look: an earlier or the same key, and for a local layer
    one of the last ``window`` (itself included)."""
    gap = q_positions[:, None] - k_positions[None, :]  # [Tq, Tk] how far back each key is
    allowed = gap >= 0
    if window is not None:
        allowed &= gap < window
    return allowed
