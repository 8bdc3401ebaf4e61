"""Generation with a KV cache, computed (torch).

Runs the same layer as the engine, with the same weights and inputs, over a
sequence of P + N tokens fed the way a decoder is: the prompt's P tokens in
one pass, then one token per step, each step appending its key and value to
the cache and attending over it with a 1 × S_t score row. Every step's output
rows equal the matching rows of one full causal pass (bottom-right aligned).
Everything returned is numpy, so the views never touch torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.decode_plan import check_decode, decode_config, kept_tokens
from mha_explorer.core.specs import MaskSpec
from mha_explorer.core.weights import source_for

RUN_MAX_TOKENS = 8_192  # P + N computed here (the plan alone goes further)


def layer_tensors(cfg: MHAConfig) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    """The layer's weights (nn.Linear layout) and its inputs X [B, T, D] and X_kv [B, S, D],
    float32 on the CPU.

    The one place that knows where they come from, so the decode and tiled paths
    follow the engine's choice of weights."""
    source = source_for(cfg)
    w = source.weights(cfg, "cpu", torch.float32)
    x, xkv = source.inputs(cfg, range(cfg.batch), "cpu", torch.float32)  # [B, T, D], [B, S, D]
    return w, x, xkv


def project_heads(cfg: MHAConfig, w: dict[str, torch.Tensor], x: torch.Tensor, xkv: torch.Tensor):
    """Q [B, H, T, d_k] from x and K, V [B, Hkv, S, d_k] from xkv."""
    B, T, S, H, Hkv, dk = x.shape[0], x.shape[1], xkv.shape[1], cfg.H, cfg.Hkv, cfg.d_k
    q = F.linear(x, w["W_Q"], w.get("b_Q"))  # [B, T, D]
    k = F.linear(xkv, w["W_K"], w.get("b_K"))  # [B, S, Hkv·d_k]
    v = F.linear(xkv, w["W_V"], w.get("b_V"))  # [B, S, Hkv·d_k]
    qh = q.view(B, T, H, dk).transpose(1, 2)  # [B, H, T, d_k]
    kh = k.view(B, S, Hkv, dk).transpose(1, 2)  # [B, Hkv, S, d_k]
    vh = v.view(B, S, Hkv, dk).transpose(1, 2)  # [B, Hkv, S, d_k]
    return qh, kh, vh


@dataclass(frozen=True)
class StepResult:
    step: int
    positions: tuple[int, int]  # the new tokens' positions [p0, p1) in the sequence
    cache_positions: tuple[int, int]  # the positions the cache holds after the step
    output: np.ndarray  # [B, n, D]: the layer's output rows for the new tokens
    scores: np.ndarray  # [H, n, keys] for the shown batch element (-inf where masked)
    weights: np.ndarray  # [H, n, keys] its softmax
    key_positions: tuple[int, int]  # the keys the score row spans [k0, k1)


@dataclass(frozen=True)
class DecodeRun:
    config: MHAConfig  # the whole sequence's config (decode_config)
    prompt: int
    steps: tuple[StepResult, ...]
    cache_k: np.ndarray  # [Hkv, kept, d_k] the final cache of the shown batch element
    cache_v: np.ndarray


def _attend(q, k_cache, v_cache, visible: np.ndarray | None, scale: float):
    """q [B, H, n, d_k] over the cache [B, Hkv, keys, d_k]: scores, weights, context."""
    B, H, n, dk = q.shape
    Hkv, keys = k_cache.shape[1], k_cache.shape[2]
    G = H // Hkv
    qg = q.reshape(B, Hkv, G * n, dk)  # [B, Hkv, G·n, d_k]: the heads sharing a cache stacked
    scores = (qg @ k_cache.transpose(-2, -1)) * scale  # [B, Hkv, G·n, keys]
    if visible is not None:
        hidden = torch.from_numpy(~visible).repeat(G, 1)  # [G·n, keys]
        scores = scores.masked_fill(hidden, -math.inf)
    weights = torch.softmax(scores, dim=-1)  # [B, Hkv, G·n, keys]
    context = weights @ v_cache  # [B, Hkv, G·n, d_k]
    heads = (B, H, n, keys)
    return scores.view(heads), weights.view(heads), context.view(B, H, n, dk)  # [B, H, n, ·]


def run_decode(cfg: MHAConfig, prompt: int, steps: int, *, show_batch: int = 0) -> DecodeRun:
    """The prompt pass and ``steps`` generation steps, float32 on the CPU."""
    check_decode(prompt, steps)
    if prompt + steps > RUN_MAX_TOKENS:
        raise ConfigError("steps", f"prompt + steps {prompt + steps:,} is above the cap of "
                          f"{RUN_MAX_TOKENS:,} tokens computed step by step")
    if cfg.mla:
        raise ConfigError("mla", "decoding with a latent cache is not computed yet")
    full = decode_config(cfg, prompt, steps)
    w, x, _ = layer_tensors(full)
    B, D, Hkv, dk = full.batch, full.d_model, full.Hkv, full.d_k
    show = show_batch if 0 <= show_batch < B else 0
    scale = 1.0 / math.sqrt(dk)
    k_cache = torch.empty(B, Hkv, 0, dk)  # [B, Hkv, kept, d_k]
    v_cache = torch.empty(B, Hkv, 0, dk)
    first = 0  # the position of the oldest cached token
    results = []
    with torch.no_grad():
        for t in range(steps + 1):
            p0, p1 = (0, prompt) if t == 0 else (prompt + t - 1, prompt + t)
            q, k_new, v_new = project_heads(full, w, x[:, p0:p1], x[:, p0:p1])
            k_cache = torch.cat([k_cache, k_new], dim=2)  # [B, Hkv, kept + n, d_k]
            v_cache = torch.cat([v_cache, v_new], dim=2)
            n, keys = p1 - p0, k_cache.shape[2]
            # the new rows are the last n of the keys seen so far: bottom-right alignment
            spec = MaskSpec(True, "bottom-right", full.window)
            visible = spec.visible(0, n, n, keys)  # [n, keys]
            scores, weights, context = _attend(q, k_cache, v_cache, visible, scale)
            merged = context.transpose(1, 2).reshape(B, n, D)  # [B, n, D]
            y = F.linear(merged, w["W_O"], w.get("b_O"))  # [B, n, D]
            kept = kept_tokens(full, p1)
            drop = keys - kept  # a sliding window forgets the oldest keys
            results.append(StepResult(
                t, (p0, p1), (first + drop, first + keys), y.numpy().copy(),
                scores[show].numpy().copy(), weights[show].numpy().copy(), (first, first + keys)))
            k_cache, v_cache = k_cache[:, :, drop:], v_cache[:, :, drop:]  # [B, Hkv, kept, d_k]
            first += drop
    return DecodeRun(full, prompt, tuple(results), k_cache[show].numpy().copy(), v_cache[show].numpy().copy())



def full_pass(cfg: MHAConfig) -> np.ndarray:
    """One full pass of the layer with torch's SDPA and the config's mask: Y [B, T, D]."""
    w, x, xkv = layer_tensors(cfg)
    B, T, D, g = cfg.batch, cfg.T, cfg.d_model, cfg.group_size
    visible = cfg.mask_spec.visible(0, T, T, cfg.S)
    with torch.no_grad():
        q, k, v = project_heads(cfg, w, x, xkv)  # [B, H, T, d_k], [B, Hkv, S, d_k] ×2
        ctx = F.scaled_dot_product_attention(
            q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
            attn_mask=None if visible is None else torch.from_numpy(visible))  # [B, H, T, d_k]
        y = F.linear(ctx.transpose(1, 2).reshape(B, T, D), w["W_O"], w.get("b_O"))  # [B, T, D]
    return y.numpy()


def max_abs_diff_vs_full(run: DecodeRun) -> float:
    """The largest difference between the decoded rows and one full causal pass."""
    full = full_pass(run.config)
    return max(float(np.abs(s.output - full[:, s.positions[0]:s.positions[1]]).max()) for s in run.steps)
