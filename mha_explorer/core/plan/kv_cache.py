"""The KV cache of one layer written out (``kv_formula``), and of the same model under each
attention variant side by side (no torch).

For the config's D, H, head widths, S, B and dtype: MHA, GQA, MQA, every other family's own cache
and, when the config has a sliding window, that window, each as bytes per token, per sequence
and per batch, for one layer and (given the layer count, ``model_layers``) for the whole model.
The window row keeps the config's own kind of K/V and caches at most W (+ global) tokens per
sequence.
"""

from __future__ import annotations

from dataclasses import dataclass

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.presets import PRESETS
from mha_explorer.core.models.catalog import model_named
from mha_explorer.core.specs.mask_counts import cached_tokens
from mha_explorer.core.specs.masks import MaskSpec
from mha_explorer.core.variants.grouped import gqa_default, grouping_counts
from mha_explorer.core.variants.registry import FAMILIES, family_of

KV_COMPARE_HEADER = ("variant", "setting", "per token (formula)", "bytes per token", "tokens cached",
                     "bytes per sequence", "bytes per batch", "whole model (bytes)", "vs MHA")


@dataclass(frozen=True)
class KVRow:
    variant: str  # a kind of attention ("MHA", "GQA", ...) or "window"
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


@dataclass(frozen=True)
class KVFormula:
    """The KV cache of one layer, as a person reads it: per token, per sequence and per batch,
    each as symbols, as this config's numbers and as bytes. The Parameters panel, ``shapes``
    and the comparison table all print these strings; none writes its own."""

    token_symbols: str  # e.g. "2 × Hkv × d_k × e", "(r_kv + d_r) × e"
    token_numbers: str  # e.g. "2 × 2 × 64 × 4"
    per_token: int  # bytes
    tokens_symbols: str  # "S", "min(S, W)", "min(S, W + N)", "min(S, 2W − 1)"
    tokens_numbers: str  # e.g. "64", "min(64, 16) = 16"
    tokens: int  # tokens cached per sequence
    batch: int

    @property
    def per_sequence(self) -> int:
        return self.per_token * self.tokens

    @property
    def per_batch(self) -> int:
        return self.per_sequence * self.batch


def kv_formula(cfg: MHAConfig) -> KVFormula:
    """The config's own cache: what its family keeps per token, for the tokens its mask keeps."""
    layout = family_of(cfg).cache(cfg)
    e = cfg.elem_bytes
    spec, S = cfg.mask_spec, cfg.S
    tokens = cached_tokens(spec, S)
    if spec.window is None:
        symbols, numbers = "S", f"{S:,}"
    else:
        reach = "W" if spec.causal else "2W − 1"
        extra = " + N" if spec.global_tokens else ""
        reach_value = (spec.window if spec.causal else 2 * spec.window - 1) + spec.global_tokens
        symbols = f"min(S, {reach}{extra})"
        numbers = f"min({S:,}, {reach_value:,}) = {tokens:,}"
    return KVFormula(f"{layout.symbols} × e", f"{layout.numbers} × {e}", layout.elements_per_token * e,
                     symbols, numbers, tokens, cfg.batch)


def kv_cache_bytes(cfg: MHAConfig) -> tuple[int, int, int]:
    """(per token, per sequence, for the batch) of one layer, for the config as it is."""
    f = kv_formula(cfg)
    return f.per_token, f.per_sequence, f.per_batch


def gqa_heads(cfg: MHAConfig) -> int | None:
    """The config's own Hkv when it is GQA, else the divisor of H nearest H/4 (strictly
    between 1 and H); None when H has no such divisor (H prime, or H ≤ 3)."""
    return gqa_default(cfg.H, cfg.Hkv) if grouping_counts(cfg.H) else None


def model_layers(cfg: MHAConfig) -> int:
    """How many layers the whole model has: the trained model's own description, else the
    preset whose architecture ``cfg`` has, else 1 (a single layer of no known model)."""
    model = model_named(cfg.weights)
    if model is not None:
        return model.layers
    for preset in PRESETS.values():
        if preset.layers > 1 and preset.apply(cfg) == cfg:
            return preset.layers
    return 1


def _row(cfg: MHAConfig, variant: str, setting: str, formula: str, per_token: int, tokens: int,
         layers: int, current: bool) -> KVRow:
    per_sequence = per_token * tokens
    per_batch = per_sequence * cfg.batch
    return KVRow(variant, setting, formula, per_token, tokens, per_sequence, per_batch,
                 per_batch * layers, current)


def kv_compare_rows(cfg: MHAConfig, layers: int = 1) -> list[KVRow]:
    """MHA, GQA (when H allows one), MQA, every other family's own cache, and the config's sliding
    window when it has one, in that order. The grouped rows use the config's own head widths (a
    latent config's d_n + d_r keys and d_v values), so a model is compared with itself, not with
    D / H."""
    e, H, S = cfg.elem_bytes, cfg.H, cfg.S
    kind = cfg.variant
    full = cached_tokens(MaskSpec(), S)  # no window: all S tokens
    widths = family_of(cfg).widths(cfg)
    qk, v = widths.qk, widths.v

    def grouped(name: str, setting: str, kv: int) -> KVRow:
        formula = f"2 × {kv} × {qk} × {e}" if qk == v else f"{kv} × ({qk} + {v}) × {e}"
        return _row(cfg, name, setting, formula, kv * (qk + v) * e, full, layers, kind == name)

    rows = [grouped("MHA", f"Hkv = H = {H}", H)]
    g = gqa_heads(cfg)
    if g is not None:
        rows.append(grouped("GQA", f"Hkv = {g}", g))
    rows.append(grouped("MQA", "Hkv = 1", 1))
    for family in FAMILIES[1:]:  # each other family's own cache, from this config's sizes
        layout = family.cache(cfg)
        setting = ", ".join(f"{f.symbol} = {value}" for f, value in
                            ((f, family.dims(cfg).get(f.symbol)) for f in family.fields) if value is not None
                            and f.symbol in layout.symbols)
        rows.append(_row(cfg, family.kinds[0], setting, f"{layout.numbers} × {e}",
                         layout.elements_per_token * e, full, layers, kind in family.kinds))
    w = cfg.window
    if w is None:  # no window to compare: a made-up one would read as the config's
        return rows
    spec = MaskSpec(True, cfg.causal_alignment, w, cfg.stride, cfg.global_tokens)
    own = next(r for r in rows if r.variant == kind)
    rows.append(_row(cfg, "window", f"W = {w}, as {kind}", f"{own.formula}; min(S, W"
                     + (" + N)" if cfg.global_tokens else ")") + " tokens",
                     own.per_token, cached_tokens(spec, S), layers, True))
    return rows


def kv_compare_table(cfg: MHAConfig, layers: int = 1) -> list[tuple]:
    """Rows for a table (header KV_COMPARE_HEADER): numbers raw, so CSV can sum them."""
    rows = kv_compare_rows(cfg, layers)
    return [r.as_tuple(rows[0]) for r in rows]
