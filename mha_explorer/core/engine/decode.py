"""Generation with a KV cache, computed (torch).

Runs the same layer as the engine, with the same weights and inputs, over a
sequence of P + N tokens fed the way a decoder is: the prompt's P tokens in
one pass, then one token per step, each step appending its key and value to
the cache and attending over it with a 1 × S_t score row. Every step's output
rows equal the matching rows of one full causal pass (bottom-right aligned).
Latent attention (MLA) caches [c_KV | k_rope] per token instead and runs each
step in the absorbed form, with the engine's MLA weights, positions and RoPE.
Everything returned is numpy, so the views never touch torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.engine.weights import source_for
from mha_explorer.core.kernels.positions import apply_rope
from mha_explorer.core.kernels.steps import add_positions, rotate_qk
from mha_explorer.core.plan.decode import check_decode, decode_config, kept_tokens
from mha_explorer.core.specs.masks import MaskSpec
from mha_explorer.core.variants.latent.compute import (
    RMS_EPS,
    absorbed_output_weight,
    make_mla_weights,
    mla_forward,
)
from mha_explorer.core.variants.latent.dims import MLADims, mla_dims

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
    # the final cache of the shown batch element: K and V [Hkv, kept, d_k], or for
    # latent attention the latent c_KV [1, kept, r_kv] and the RoPE key [1, kept, d_r]
    cache_k: np.ndarray
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
    width = v_cache.shape[-1]  # d_k, or r_kv for a latent cache
    return scores.view(heads), weights.view(heads), context.view(B, H, n, width)  # [B, H, n, ·]


def run_decode(cfg: MHAConfig, prompt: int, steps: int, *, show_batch: int = 0) -> DecodeRun:
    """The prompt pass and ``steps`` generation steps, float32 on the CPU."""
    check_decode(prompt, steps)
    if prompt + steps > RUN_MAX_TOKENS:
        raise ConfigError("steps", f"prompt + steps {prompt + steps:,} is above the cap of "
                          f"{RUN_MAX_TOKENS:,} tokens computed step by step")
    full = decode_config(cfg, prompt, steps)
    if full.mla:
        return _run_decode_mla(full, prompt, steps, show_batch)
    w, x_in, _ = layer_tensors(full)
    x = add_positions(x_in, full)  # [B, L, D]: the engine's added positions, if any
    turns = full.positions_spec.rotates_qk
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
            if turns:  # RoPE: each token turned once, by its place in the whole sequence
                pos = torch.arange(p0, p1)
                q, k_new = apply_rope(q, pos), apply_rope(k_new, pos)
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



def mla_tensors(cfg: MHAConfig) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """The engine's MLA weights (checkpoint names) and its input X [B, T, D] with the
    config's added positions, float32 on the CPU: what engine.run computes with."""
    if cfg.weights_spec.trained:
        raise ConfigError("weights", "latent attention runs with random weights only; "
                          "choose random weights or turn latent attention off", [{"weights": "random"}])
    x, _ = source_for(cfg).inputs(cfg, range(cfg.batch), "cpu", torch.float32)  # [B, T, D]
    return make_mla_weights(cfg), add_positions(x, cfg)


def _mla_new_tokens(cfg: MHAConfig, m: MLADims, w: dict[str, torch.Tensor], x: torch.Tensor, p0: int):
    """The new tokens x [B, n, D] at positions p0.. : the query's two parts
    [B, H, n, d_n], [B, H, n, d_r] and their cache rows [B, n, r_kv + d_r]."""
    B, n = x.shape[0], x.shape[1]
    if m.q_lora_rank is None:
        q = F.linear(x, w["q_proj"])  # [B, n, H·(d_n+d_r)]
    else:
        c_q = F.linear(x, w["q_a_proj"], w.get("q_a_proj.bias"))  # [B, n, r_q]
        c_q = F.rms_norm(c_q, (m.q_lora_rank,), w["q_a_layernorm"], RMS_EPS)
        q = F.linear(c_q, w["q_b_proj"])  # [B, n, H·(d_n+d_r)]
    kv_a = F.linear(x, w["kv_a_proj_with_mqa"], w.get("kv_a_proj_with_mqa.bias"))  # [B, n, r_kv+d_r]
    c_kv, k_rope = kv_a.split([m.kv_lora_rank, m.rope], dim=-1)  # [B, n, r_kv], [B, n, d_r]
    c_kv = F.rms_norm(c_kv, (m.kv_lora_rank,), w["kv_a_layernorm"], RMS_EPS)
    qh = q.view(B, n, m.H, m.qk).transpose(1, 2)  # [B, H, n, d_n+d_r]
    q_nope, q_rope = qh.split([m.nope, m.rope], dim=-1)  # [B, H, n, d_n], [B, H, n, d_r]
    if cfg.positions == "rope":  # each token turned once, by its place in the whole sequence
        pos = torch.arange(p0, p0 + n)
        q_rope = apply_rope(q_rope, pos)
        k_rope = apply_rope(k_rope.unsqueeze(1), pos).squeeze(1)  # [B, n, d_r]
    return q_nope, q_rope, torch.cat([c_kv, k_rope], dim=-1)  # [B, n, r_kv+d_r]


def _run_decode_mla(full: MHAConfig, prompt: int, steps: int, show_batch: int) -> DecodeRun:
    """The latent cache [B, kept, r_kv + d_r] and the absorbed form: each head's
    q_nope·W_UK scores against the cached latents, W_UV folded into W_O."""
    m = mla_dims(full)
    w, x = mla_tensors(full)  # x: [B, L, D]
    B, r = full.batch, m.kv_lora_rank
    show = show_batch if 0 <= show_batch < B else 0
    scale = 1.0 / math.sqrt(m.qk)  # the naive form's scale, kept by the absorbed one
    w_uk = w["kv_b_proj"].view(m.H, m.nope + m.v, r)[:, : m.nope]  # [H, d_n, r_kv]
    w_ouv = absorbed_output_weight(m, w)  # [D, H·r_kv]
    cache = torch.empty(B, 0, m.cached_width)  # [B, kept, r_kv+d_r]
    first, results = 0, []
    with torch.no_grad():
        for t in range(steps + 1):
            p0, p1 = (0, prompt) if t == 0 else (prompt + t - 1, prompt + t)
            q_nope, q_rope, rows = _mla_new_tokens(full, m, w, x[:, p0:p1], p0)
            cache = torch.cat([cache, rows], dim=1)  # [B, kept + n, r_kv+d_r]
            n, keys = p1 - p0, cache.shape[1]
            q = torch.cat([q_nope @ w_uk, q_rope], dim=-1)  # [B, H, n, r_kv+d_r]
            visible = MaskSpec(True, "bottom-right", full.window).visible(0, n, n, keys)  # [n, keys]
            shared = cache.unsqueeze(1)  # [B, 1, keys, r_kv+d_r]: one cache read by every head
            scores, weights, ctx = _attend(q, shared, shared[..., :r], visible, scale)  # ctx [B, H, n, r_kv]
            merged = ctx.transpose(1, 2).reshape(B, n, m.H * r)  # [B, n, H·r_kv]
            y = F.linear(merged, w_ouv, w.get("o_proj.bias"))  # [B, n, D]
            drop = keys - kept_tokens(full, p1)  # a sliding window forgets the oldest tokens
            results.append(StepResult(
                t, (p0, p1), (first + drop, first + keys), y.numpy().copy(),
                scores[show].numpy().copy(), weights[show].numpy().copy(), (first, first + keys)))
            cache = cache[:, drop:]  # [B, kept, r_kv+d_r]
            first += drop
    latent, k_rope = cache[show].split([r, m.rope], dim=-1)  # [kept, r_kv], [kept, d_r]
    return DecodeRun(full, prompt, tuple(results), latent[None].numpy().copy(), k_rope[None].numpy().copy())


def _mla_full_pass(cfg: MHAConfig) -> np.ndarray:
    """engine.run's MLA pass (naive form) over the whole sequence: Y [B, T, D]."""
    w, x = mla_tensors(cfg)
    visible = cfg.mask_spec.visible(0, cfg.T, cfg.T, cfg.S)
    with torch.no_grad():
        stages = mla_forward(cfg, x, x, w, None if visible is None else torch.from_numpy(visible))
    return stages["output"]["Y"].numpy()


def full_pass(cfg: MHAConfig) -> np.ndarray:
    """One full pass of the layer with torch's SDPA and the config's mask: Y [B, T, D]."""
    if cfg.mla:
        return _mla_full_pass(cfg)
    w, x_in, xkv_in = layer_tensors(cfg)
    x = add_positions(x_in, cfg)  # [B, T, D]
    xkv = add_positions(xkv_in, cfg, seed_salt=1) if cfg.is_cross else x  # [B, S, D]
    B, T, D, g = cfg.batch, cfg.T, cfg.d_model, cfg.group_size
    visible = cfg.mask_spec.visible(0, T, T, cfg.S)
    with torch.no_grad():
        q, k, v = project_heads(cfg, w, x, xkv)  # [B, H, T, d_k], [B, Hkv, S, d_k] ×2
        q, k = rotate_qk(q, k, cfg)  # RoPE by position, else unchanged
        ctx = F.scaled_dot_product_attention(
            q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
            attn_mask=None if visible is None else torch.from_numpy(visible))  # [B, H, T, d_k]
        y = F.linear(ctx.transpose(1, 2).reshape(B, T, D), w["W_O"], w.get("b_O"))  # [B, T, D]
    return y.numpy()


def max_abs_diff_vs_full(run: DecodeRun) -> float:
    """The largest difference between the decoded rows and one full causal pass."""
    full = full_pass(run.config)
    return max(float(np.abs(s.output - full[:, s.positions[0]:s.positions[1]]).max()) for s in run.steps)
