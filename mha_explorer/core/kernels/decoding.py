"""Decoding with a KV cache, the parts every family shares (torch).

The whole generated sequence is one causal self-attention pass of L = P + N tokens; a
decoder feeds it the prompt's P rows at once, then one row per step. The keys each new row
sees come from the config's own ``MaskSpec`` (window, stride, global tokens, causal), read at
the rows' absolute positions, so every step's rows equal the matching rows of the full pass.
The cache keeps exactly what a later row can still see: everything, or under a sliding
window the last W positions plus the global ones (``shapes`` counts the same, cached_tokens).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from mha_explorer.core.specs.masks import MaskSpec

RUN_MAX_TOKENS = 8_192  # P + N computed step by step (the plan alone goes further)


@dataclass(frozen=True)
class StepResult:
    step: int
    positions: tuple[int, int]  # the new tokens' positions [p0, p1) in the sequence
    cache_positions: tuple[int, ...]  # the positions the cache holds after the step
    output: np.ndarray  # [B, n, D]: the layer's output rows for the new tokens
    scores: np.ndarray  # [H, n, keys] for the shown batch element (-inf where masked)
    weights: np.ndarray  # [H, n, keys] its softmax
    key_positions: tuple[int, ...]  # the position of each key the score rows span


@dataclass(frozen=True)
class DecodeRun:
    config: Any  # the whole sequence's config (plan.decode.decode_config)
    prompt: int
    steps: tuple[StepResult, ...]
    # the final cache of the shown batch element: K and V [Hkv, kept, d_k], or for latent
    # attention the latent c_KV [1, kept, r_kv] and the RoPE key [1, kept, d_r]
    cache_k: np.ndarray
    cache_v: np.ndarray


@dataclass(frozen=True)
class LayerTensors:
    """A layer's weights (nn.Linear layout) and its input X [B, L, D], float32 on the CPU."""

    weights: dict[str, torch.Tensor]
    x: torch.Tensor
    x_kv: torch.Tensor

    def __iter__(self):  # w, x, x_kv = tensors
        return iter((self.weights, self.x, self.x_kv))


def visible_rows(spec: MaskSpec, p0: int, p1: int, length: int, keys: np.ndarray) -> np.ndarray | None:
    """Bool [p1 − p0, len(keys)]: which of the cached ``keys`` (absolute positions) the rows at
    positions p0..p1−1 may see, by the sequence's own mask; None when nothing is masked."""
    rows = spec.visible(p0, p1, length, length)  # [n, L]: self-attention, so offset 0
    return None if rows is None else rows[:, keys]


def kept_after(spec: MaskSpec, p1: int, keys: np.ndarray) -> np.ndarray:
    """Bool per cached key: whether it stays after the step that ended at position p1. A
    sliding window keeps the last W positions (and the global ones); without one, all."""
    if spec.window is None:
        return np.ones(len(keys), dtype=bool)
    keep = keys >= p1 - spec.window
    if spec.global_tokens and spec.sparse:
        keep |= keys < spec.global_tokens
    return keep


def attend_cache(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
                 visible: np.ndarray | None, scale: float):
    """q [B, H, n, w] over the cache [B, Hkv, keys, w]: scores, weights, context.

    The heads sharing a cache entry are stacked along the rows, so nothing is repeated."""
    B, H, n, width = q.shape
    Hkv, keys = k_cache.shape[1], k_cache.shape[2]
    G = H // Hkv
    qg = q.reshape(B, Hkv, G * n, width)  # [B, Hkv, G·n, w]: the heads sharing a cache stacked
    scores = (qg @ k_cache.transpose(-2, -1)) * scale  # [B, Hkv, G·n, keys]
    if visible is not None:
        hidden = torch.from_numpy(~visible).repeat(G, 1)  # [G·n, keys]
        scores = scores.masked_fill(hidden, -math.inf)
    weights = torch.softmax(scores, dim=-1)  # [B, Hkv, G·n, keys]
    context = weights @ v_cache  # [B, Hkv, G·n, v]
    heads = (B, H, n, keys)
    v_width = v_cache.shape[-1]  # d_k, or r_kv for a latent cache
    return scores.view(heads), weights.view(heads), context.view(B, H, n, v_width)  # [B, H, n, ·]


def step_rows(t: int, prompt: int) -> tuple[int, int]:
    """Positions [p0, p1) a step feeds: the whole prompt at step 0, then one token."""
    return (0, prompt) if t == 0 else (prompt + t - 1, prompt + t)
