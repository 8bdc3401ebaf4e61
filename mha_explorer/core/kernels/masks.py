"""MaskSpec in torch: the visible-keys block as a bool tensor, and masked softmax attention."""

from __future__ import annotations

import torch

from mha_explorer.core.specs.masks import MaskSpec


def visible_block(spec: MaskSpec, r0: int, r1: int, T: int, S: int,
                  device: torch.device | str = "cpu") -> torch.Tensor | None:
    """Bool [r1 − r0, S] from MaskSpec.visible (one definition for the plan, maps and engine)."""
    block = spec.visible(r0, r1, T, S)
    return None if block is None else torch.from_numpy(block).to(device)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float,
           visible: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(scores, weights, context) for q [.., T, d], k [.., S, d], v [.., S, d_v].

    A row that sees no key gets weights 0 (softmax of nothing is undefined) instead of NaN.
    """
    scores = (q @ k.transpose(-2, -1)) * scale  # [.., T, S]
    if visible is not None:
        scores = scores.masked_fill(~visible, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # [.., T, S]
    if visible is not None:
        weights = torch.nan_to_num(weights, nan=0.0)
    return scores, weights, weights @ v  # context [.., T, d_v]
