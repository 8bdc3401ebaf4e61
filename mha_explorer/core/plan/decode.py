"""Generation with a KV cache, step by step, as plain arithmetic (no torch).

Step 0 is the prompt pass: P tokens at once, a P × P causal score matrix, and
their keys and values written to the cache. Each later step feeds one new token:
one query row, its key and value appended to the cache, a 1 × S_t score row over
the cache. S_t = P + t tokens have been seen after step t; under a sliding window
W the cache is rolling and keeps min(S_t, W) of them.

The cache is what grows: per layer it holds K and V, [B, Hkv, S_t, d_k] each,
so GQA and MQA shrink it by H / Hkv. Multi-head latent attention keeps one
latent c_KV of kv_lora_rank numbers and a RoPE key of qk_rope_head_dim per token
instead, [B, S_t, r_kv + d_r]; each family says what it caches (``cache_layout``) and
counts its steps in the form a decoder runs (the latent family: the absorbed form).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from mha_explorer.core.config import CAPS, ConfigError, MHAConfig
from mha_explorer.core.specs.mask_counts import cached_tokens
from mha_explorer.core.variants.family import CacheLayout
from mha_explorer.core.variants.registry import FAMILIES, changes_for, family_of

MAX_STEPS = 65_536  # generation steps listed by the plan (one JSON row each)


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
    """Tokens a decoder keeps after ``seen`` tokens: all, or under a sliding window the
    last W (plus the global ones), as ``shapes`` counts a causal config's (cached_tokens).
    Decoding is causal whatever the config says (decode_config), so its mask is used here."""
    return cached_tokens(replace(cfg.mask_spec, causal=True, alignment="bottom-right"), seen)


def cache_layout(cfg: MHAConfig) -> CacheLayout:
    return family_of(cfg).cache(cfg)


def step_flops(cfg: MHAConfig, rows: int, keys: int) -> dict[str, int]:
    """FLOPs of ``rows`` new tokens over ``keys`` cached keys, by stage (the family's own form)."""
    return family_of(cfg).step_flops(cfg, rows, keys)


def weights_read(cfg: MHAConfig) -> int:
    return family_of(cfg).weights_read(cfg)


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
    """Cache bytes per layer after each of ``seen_tokens`` for this config and its MHA, GQA
    (when H allows one between) and MQA siblings, without a window: the rates side by side;
    the config's own row is added when it is none of them (another family, or a window)."""
    H = cfg.H
    siblings = {"MHA": H, "MQA": 1}
    gqa = [k for k in range(2, H) if H % k == 0]
    if gqa:
        siblings["GQA"] = cfg.Hkv if 1 < cfg.Hkv < H else gqa[len(gqa) // 2]
    out: dict[str, list[int]] = {}
    plain = FAMILIES[0]  # the siblings are the default family, each with its own key/value heads
    for name, kv in sorted(siblings.items(), key=lambda item: -item[1]):
        sibling = cfg.replace(**{**changes_for(name, cfg), "n_kv_heads": kv, "window": None})
        per_token = cfg.batch * cache_layout(sibling).elements_per_token * cfg.elem_bytes
        out[f"{name} (Hkv={kv})"] = [per_token * s for s in seen_tokens]
    if family_of(cfg) is not plain or cfg.window is not None:
        per_token = cfg.batch * cache_layout(cfg).elements_per_token * cfg.elem_bytes
        label = cfg.variant if cfg.window is None else f"{cfg.variant} window {cfg.window}"
        out[label] = [per_token * kept_tokens(cfg, s) for s in seen_tokens]
    return out
