"""The KV cache of the same model under each attention variant, side by side (no torch).

For the config's D, H, d_k, S, B and dtype: MHA, GQA, MQA, MLA and a sliding window, each
as bytes per token, per sequence and per batch, for one layer and (given the layer count)
for the whole model. The window row keeps the config's own kind of K/V and caches at most
W (+ global) tokens per sequence.
"""

from __future__ import annotations

from dataclasses import dataclass

from mha_explorer.core.config import MHAConfig, divisors
from mha_explorer.core.specs.mask_counts import cached_tokens
from mha_explorer.core.specs.masks import MaskSpec
from mha_explorer.core.variants.latent.dims import kv_cache_per_token as mla_cache_per_token
from mha_explorer.core.variants.latent.dims import mla_dims

KV_COMPARE_HEADER = ("variant", "setting", "per token (formula)", "bytes per token", "tokens cached",
                     "bytes per sequence", "bytes per batch", "whole model (bytes)", "vs MHA")


@dataclass(frozen=True)
class KVRow:
    variant: str  # "MHA", "GQA", "MQA", "MLA", "window"
    setting: str  # e.g. "Hkv = 2", "r_kv = 512, d_r = 64", "W = 4096, as GQA"
    formula: str
    per_token: int  # bytes, one layer
    tokens: int  # tokens cached per sequence
    per_sequence: int
    per_batch: int
    whole_model: int  # per_batch × layers
    current: bool  # the config's own variant

    def ratio(self, mha: KVRow) -> float:
        return self.per_token / mha.per_token if mha.per_token else 0.0

    def as_tuple(self, mha: KVRow) -> tuple:
        return (self.variant + (" (current)" if self.current else ""), self.setting, self.formula,
                self.per_token, self.tokens, self.per_sequence, self.per_batch, self.whole_model,
                f"{self.ratio(mha):.3g}×")


def kv_cache_bytes(cfg: MHAConfig) -> tuple[int, int, int]:
    """(per token, per sequence, for the batch) of one layer, for the config as it is:
    2·Hkv·d_k·itemsize per token (MLA: (kv_lora_rank + qk_rope_head_dim)·itemsize), and
    per sequence min(S, W) tokens under a causal window (cached_tokens)."""
    per_token = mla_cache_per_token(cfg) if cfg.mla else 2 * cfg.kv_dim * cfg.elem_bytes
    per_sequence = per_token * cached_tokens(cfg.mask_spec, cfg.S)
    return per_token, per_sequence, per_sequence * cfg.batch


def gqa_heads(cfg: MHAConfig) -> int | None:
    """The config's own Hkv when it is GQA, else the divisor of H nearest H/4 (strictly
    between 1 and H); None when H has no such divisor (H prime, or H ≤ 3)."""
    if 1 < cfg.Hkv < cfg.H:
        return cfg.Hkv
    inner = [d for d in divisors(cfg.H) if 1 < d < cfg.H]
    return min(inner, key=lambda d: (abs(d - cfg.H / 4), d)) if inner else None


def default_window(cfg: MHAConfig) -> int:
    """The config's window, else a quarter of the key length, so the row shows a saving."""
    return cfg.window if cfg.window is not None else max(1, cfg.S // 4)


def _row(cfg: MHAConfig, variant: str, setting: str, formula: str, per_token: int, tokens: int,
         layers: int, current: bool) -> KVRow:
    per_sequence = per_token * tokens
    per_batch = per_sequence * cfg.batch
    return KVRow(variant, setting, formula, per_token, tokens, per_sequence, per_batch,
                 per_batch * layers, current)


def kv_compare_rows(cfg: MHAConfig, layers: int = 1) -> list[KVRow]:
    """MHA, GQA (when H allows one), MQA, MLA and sliding window, in that order."""
    e, dk, H, S = cfg.elem_bytes, cfg.d_k, cfg.H, cfg.S
    kind = cfg.variant
    full = cached_tokens(MaskSpec(), S)  # no window: all S tokens
    rows = [_row(cfg, "MHA", f"Hkv = H = {H}", f"2 × {H} × {dk} × {e}", 2 * H * dk * e, full,
                 layers, kind == "MHA")]
    g = gqa_heads(cfg)
    if g is not None:
        rows.append(_row(cfg, "GQA", f"Hkv = {g}", f"2 × {g} × {dk} × {e}", 2 * g * dk * e, full,
                         layers, kind == "GQA"))
    rows.append(_row(cfg, "MQA", "Hkv = 1", f"2 × 1 × {dk} × {e}", 2 * dk * e, full, layers, kind == "MQA"))
    m = mla_dims(cfg)
    rows.append(_row(cfg, "MLA", f"r_kv = {m.kv_lora_rank}, d_r = {m.rope}",
                     f"({m.kv_lora_rank} + {m.rope}) × {e}", m.cached_width * e, full, layers,
                     kind == "MLA"))
    w = default_window(cfg)
    spec = MaskSpec(True, cfg.causal_alignment, w, cfg.stride, cfg.global_tokens)
    own = next(r for r in rows if r.variant == kind)
    rows.append(_row(cfg, "window", f"W = {w}, as {kind}", f"{own.formula}; min(S, W"
                     + (" + N)" if cfg.global_tokens else ")") + " tokens",
                     own.per_token, cached_tokens(spec, S), layers, cfg.window is not None))
    return rows


def kv_compare_table(cfg: MHAConfig, layers: int = 1) -> list[tuple]:
    """Rows for a table (header KV_COMPARE_HEADER): numbers raw, so CSV can sum them."""
    rows = kv_compare_rows(cfg, layers)
    return [r.as_tuple(rows[0]) for r in rows]
