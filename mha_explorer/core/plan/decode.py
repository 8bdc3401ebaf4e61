"""Generation with a KV cache, step by step, as plain arithmetic (no torch).

Step 0 is the prompt pass: P tokens at once, a P × P causal score matrix, and
their keys and values written to the cache. Each later step feeds one new token:
one query row, its key and value appended to the cache, a 1 × S_t score row over
the cache. S_t = P + t tokens have been seen after step t; under a sliding window
W the cache is rolling and keeps min(S_t, W) of them.

The cache is what grows: per layer it holds K and V, [B, Hkv, S_t, d_k] each,
so GQA and MQA shrink it by H / Hkv. Multi-head latent attention keeps one
latent c_KV of kv_lora_rank numbers and a RoPE key of qk_rope_head_dim per token
instead, [B, S_t, r_kv + d_r] (``cache_layout``; sizes left unset take
mla_dims' defaults), and its steps are counted in the absorbed form a decoder
runs: W_UK folded into the query, W_UV into W_O.
"""

from __future__ import annotations

from dataclasses import dataclass

from mha_explorer.core.config import CAPS, ConfigError, MHAConfig
from mha_explorer.core.stages.records import SOFTMAX_OPS_PER_ELEMENT
from mha_explorer.core.variants.grouped.params import param_plan
from mha_explorer.core.variants.latent.dims import MLA_FIELDS, mla_dims, mla_param_plan
from mha_explorer.core.variants.latent.stages import NORM_OPS_PER_ELEMENT, ROPE_OPS_PER_ELEMENT

MAX_STEPS = 65_536  # generation steps listed by the plan (one JSON row each)


@dataclass(frozen=True)
class CacheLayout:
    """What one layer keeps per cached token: the tensors, their per-token widths."""

    names: tuple[str, ...]  # ("K", "V") or ("latent", "k_rope")
    dims: tuple[str, ...]  # named dims of each cached tensor, the token axis named "S_t"
    per_token: tuple[int, ...]  # elements per token per batch element, for each tensor
    lead: tuple[int, ...]  # the shape before the token axis, e.g. (B, Hkv)
    trail: int  # the size after the token axis (d_k, or the latent width)

    def shape(self, tokens: int) -> list[int]:
        return [*self.lead, tokens, self.trail]

    @property
    def elements_per_token(self) -> int:
        return sum(self.per_token)


def cache_layout(cfg: MHAConfig) -> CacheLayout:
    B, Hkv, dk = cfg.batch, cfg.Hkv, cfg.d_k
    if not cfg.mla:
        return CacheLayout(("K", "V"), ("B", "Hkv", "S_t", "d_k"), (Hkv * dk, Hkv * dk), (B, Hkv), dk)
    m = mla_dims(cfg)
    return CacheLayout(("latent", "k_rope"), ("B", "S_t", "r_kv+d_r"), (m.kv_lora_rank, m.rope), (B,),
                       m.cached_width)


def check_decode(prompt: int, steps: int, max_steps: int = MAX_STEPS) -> None:
    """ConfigError for a prompt or step count a person could not mean."""
    for name, value, cap in (("prompt", prompt, CAPS["seq"]), ("steps", steps, max_steps)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(name, f"{name} must be a whole number, got {value!r}")
        if value < 1:
            raise ConfigError(name, f"{name} must be at least 1, got {value:,}", [{name: 1}])
        if value > cap:
            raise ConfigError(name, f"{name} {value:,} is above the cap of {cap:,}", [{name: cap}])


def decode_config(cfg: MHAConfig, prompt: int, steps: int) -> MHAConfig:
    """The config of the whole generated sequence as one causal self-attention pass
    (bottom-right aligned: the last query sees every key, as with a cache)."""
    return cfg.replace(seq=prompt + steps, kv_seq=None, tokens=None, causal=True,
                       causal_alignment="bottom-right")


@dataclass(frozen=True)
class DecodeStep:
    step: int  # 0: the prompt pass
    new_tokens: int  # P at step 0, then 1
    seen_tokens: int  # S_t = P + t
    cache_tokens: int  # kept after the step: S_t, or min(S_t, W) under a window
    keys_scored: int  # the width of each new row's score row
    cache_shape: list[int]
    cache_bytes: int  # one layer, the whole batch
    model_cache_bytes: int | None  # times the layers, when known
    flops: int
    flop_terms: dict[str, int]
    bytes: int  # moved by the step: weights, cache read and written, activations
    byte_terms: dict[str, int]

    def to_dict(self) -> dict:
        return {
            "step": self.step, "new_tokens": self.new_tokens, "seen_tokens": self.seen_tokens,
            "cache_tokens": self.cache_tokens, "keys_scored": self.keys_scored,
            "cache_shape": list(self.cache_shape), "cache_bytes": self.cache_bytes,
            "model_cache_bytes": self.model_cache_bytes, "flops": self.flops,
            "flop_terms": dict(self.flop_terms), "bytes": self.bytes, "byte_terms": dict(self.byte_terms),
        }


def kept_tokens(cfg: MHAConfig, seen: int) -> int:
    return seen if cfg.window is None else min(seen, cfg.window)


def step_flops(cfg: MHAConfig, rows: int, keys: int) -> dict[str, int]:
    """FLOPs of ``rows`` new tokens attending over ``keys`` cached keys, by stage
    (counted as the stage plan counts them, with T = rows and S = keys)."""
    if cfg.mla:
        return mla_step_flops(cfg, rows, keys)
    B, D, kvD, H, dk = cfg.batch, cfg.d_model, cfg.kv_dim, cfg.H, cfg.d_k
    bias = cfg.bias
    return {
        "project": 2 * B * rows * D * (D + 2 * kvD) + (B * rows * (D + 2 * kvD) if bias else 0),
        "scores": 2 * B * H * rows * keys * dk + B * H * rows * keys,
        "softmax": SOFTMAX_OPS_PER_ELEMENT * B * H * rows * keys,
        "weighted_sum": 2 * B * H * rows * keys * dk,
        "output": 2 * B * rows * D * D + (B * rows * D if bias else 0),
    }


def mla_step_flops(cfg: MHAConfig, rows: int, keys: int) -> dict[str, int]:
    """The absorbed form, as a decoder runs it: only the new tokens are projected and
    compressed; every head scores its latent query against the cached [c_KV | k_rope]
    (r_kv + d_r wide), averages the latents, and W_OUV (W_UV folded into W_O once,
    not counted per step) maps the H latents of r_kv back to D."""
    m = mla_dims(cfg)
    B, D, H, n, r, bias = cfg.batch, cfg.d_model, cfg.H, rows, m.kv_lora_rank, cfg.bias
    qw = H * m.qk
    if m.q_lora_rank is None:
        query = 2 * B * n * D * qw
    else:
        rq = m.q_lora_rank
        query = 2 * B * n * D * rq + NORM_OPS_PER_ELEMENT * B * n * rq + 2 * B * n * rq * qw
        query += B * n * rq if bias else 0
    w = m.cached_width
    terms = {
        "q_project": query,
        "kv_compress": 2 * B * n * D * w + NORM_OPS_PER_ELEMENT * B * n * r + (B * n * w if bias else 0),
    }
    if cfg.positions == "rope":  # the new queries and the new shared key; cached keys stay turned
        terms["rope"] = ROPE_OPS_PER_ELEMENT * (B * H * n * m.rope + B * n * m.rope)
    terms.update({
        "absorb_q": 2 * B * H * n * m.nope * r,
        "scores": 2 * B * H * n * keys * w + B * H * n * keys,
        "softmax": SOFTMAX_OPS_PER_ELEMENT * B * H * n * keys,
        "weighted_sum": 2 * B * H * n * keys * r,
        "output": 2 * B * n * H * r * D + (B * n * D if bias else 0),
    })
    return terms


def weights_read(cfg: MHAConfig) -> int:
    """Numbers of weight a step reads. The absorbed form reads W_OUV [D, H·r_kv] in
    place of W_UV and W_O; W_UK stays inside kv_b_proj."""
    if not cfg.mla:
        return param_plan(cfg).total
    m = mla_dims(cfg)
    stored = mla_param_plan(cfg).total
    return stored - m.H * m.v * m.kv_lora_rank - m.H * m.v * m.D + m.D * m.H * m.kv_lora_rank


def step_bytes(cfg: MHAConfig, rows: int, keys: int, params: int) -> dict[str, int]:
    """Bytes a step reads and writes at the dtype, when nothing stays in a cache
    of the processor: decoding reads every weight and the whole KV cache to make
    one token, which is why it is limited by memory, not arithmetic."""
    layout = cache_layout(cfg)
    B, D, H, e = cfg.batch, cfg.d_model, cfg.H, cfg.elem_bytes
    per_token = B * layout.elements_per_token * e
    return {
        "weights": params * e,
        "cache read": per_token * keys,
        "cache written": per_token * rows,
        "input and output": 2 * B * rows * D * e,
        "score row and its softmax": 2 * B * H * rows * keys * e,
    }


def decode_steps(cfg: MHAConfig, prompt: int, steps: int, layers: int | None = None) -> list[DecodeStep]:
    """Step 0 (the prompt pass of ``prompt`` tokens) and ``steps`` generation steps."""
    check_decode(prompt, steps)
    if layers is not None and (isinstance(layers, bool) or not isinstance(layers, int) or layers < 1):
        raise ConfigError("layers", f"layers must be a positive whole number, got {layers!r}")
    layout = cache_layout(cfg)
    params = weights_read(cfg)
    per_token = cfg.batch * layout.elements_per_token * cfg.elem_bytes
    out = []
    for t in range(steps + 1):
        rows = prompt if t == 0 else 1
        seen = prompt + t
        kept = kept_tokens(cfg, seen)
        # the prompt pass scores all P keys (masked to the window); later rows see the rolling cache
        keys = prompt if t == 0 else kept
        flops = step_flops(cfg, rows, keys)
        moved = step_bytes(cfg, rows, keys, params)
        cache = per_token * kept
        out.append(DecodeStep(
            step=t, new_tokens=rows, seen_tokens=seen, cache_tokens=kept, keys_scored=keys,
            cache_shape=layout.shape(kept), cache_bytes=cache,
            model_cache_bytes=None if layers is None else cache * layers,
            flops=sum(flops.values()), flop_terms=flops, bytes=sum(moved.values()), byte_terms=moved,
        ))
    return out


def cache_growth(cfg: MHAConfig, seen_tokens: list[int]) -> dict[str, list[int]]:
    """Cache bytes per layer after each of ``seen_tokens`` for this config and its
    MHA, GQA (when H allows one between) and MQA siblings: the rates side by side."""
    H = cfg.H
    siblings = {"MHA": H, "MQA": 1}
    gqa = [k for k in range(2, H) if H % k == 0]
    if gqa:
        siblings["GQA"] = cfg.Hkv if 1 < cfg.Hkv < H else gqa[len(gqa) // 2]
    out: dict[str, list[int]] = {}
    plain = {name: None for name in MLA_FIELDS}  # the siblings are plain attention
    for name, kv in sorted(siblings.items(), key=lambda item: -item[1]):
        sibling = cfg.replace(n_kv_heads=kv, mla=False, window=None, **plain)
        per_token = cfg.batch * cache_layout(sibling).elements_per_token * cfg.elem_bytes
        out[f"{name} (Hkv={kv})"] = [per_token * s for s in seen_tokens]
    per_token = cfg.batch * cache_layout(cfg).elements_per_token * cfg.elem_bytes
    if cfg.mla:
        label = "MLA" if cfg.window is None else f"MLA window {cfg.window}"
        out[label] = [per_token * kept_tokens(cfg, s) for s in seen_tokens]
    elif cfg.window is not None:
        out[f"{cfg.variant} window {cfg.window}"] = [per_token * kept_tokens(cfg, s) for s in seen_tokens]
    return out
