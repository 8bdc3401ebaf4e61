"""Generation with a KV cache, step by step, as plain arithmetic (no torch).

Step 0 is the prompt pass: P tokens at once, a P × P causal score matrix, and
their keys and values written to the cache. Each later step feeds one new token:
one query row, its key and value appended to the cache, a 1 × S_t score row over
the cache. S_t = P + t tokens have been seen after step t; under a sliding window
W the cache is rolling and keeps min(S_t, W) of them.

The cache is what grows: per layer it holds K and V, [B, Hkv, S_t, d_k] each,
so GQA and MQA shrink it by H / Hkv. Multi-head latent attention keeps one
latent of kv_lora_rank numbers and a RoPE key of qk_rope_head_dim per token
instead (``cache_layout``), once those ranks are set.
"""

from __future__ import annotations

from dataclasses import dataclass

from mha_explorer.core.config import CAPS, ConfigError, MHAConfig
from mha_explorer.core.plan import SOFTMAX_OPS_PER_ELEMENT, param_plan

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
    rank, rope = cfg.kv_lora_rank, cfg.qk_rope_head_dim
    if rank is None or rope is None:
        raise ConfigError("mla", "the latent cache needs kv_lora_rank and qk_rope_head_dim")
    return CacheLayout(("latent", "k_rope"), ("B", "S_t", "r+d_rope"), (rank, rope), (B,), rank + rope)


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
        raise ConfigError("mla", "step FLOPs of latent attention are not counted yet")
    B, D, kvD, H, dk = cfg.batch, cfg.d_model, cfg.kv_dim, cfg.H, cfg.d_k
    bias = cfg.bias
    return {
        "project": 2 * B * rows * D * (D + 2 * kvD) + (B * rows * (D + 2 * kvD) if bias else 0),
        "scores": 2 * B * H * rows * keys * dk + B * H * rows * keys,
        "softmax": SOFTMAX_OPS_PER_ELEMENT * B * H * rows * keys,
        "weighted_sum": 2 * B * H * rows * keys * dk,
        "output": 2 * B * rows * D * D + (B * rows * D if bias else 0),
    }


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
    params = param_plan(cfg).total
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
    for name, kv in sorted(siblings.items(), key=lambda item: -item[1]):
        sibling = cfg.replace(n_kv_heads=kv, mla=False, window=None)
        per_token = cfg.batch * cache_layout(sibling).elements_per_token * cfg.elem_bytes
        out[f"{name} (Hkv={kv})"] = [per_token * s for s in seen_tokens]
    if cfg.window is not None:
        per_token = cfg.batch * cache_layout(cfg.replace(window=None)).elements_per_token * cfg.elem_bytes
        out[f"{cfg.variant} window {cfg.window}"] = [per_token * kept_tokens(cfg, s) for s in seen_tokens]
    if cfg.mla:
        per_token = cfg.batch * cache_layout(cfg).elements_per_token * cfg.elem_bytes
        out["MLA"] = [per_token * s for s in seen_tokens]
    return out
