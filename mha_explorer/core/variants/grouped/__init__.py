"""Grouped-query attention: MHA, GQA and MQA, one family told apart by the key/value heads.

Every query head h reads key/value head h // (H / Hkv): Hkv = H is multi-head attention, 1 is
multi-query attention, anything between is grouped-query attention. Its arithmetic is in
``shapes``, ``params`` and ``copies``, its listing in ``code`` and its torch in ``compute``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_explorer.core.errors import ConfigError
from mha_explorer.core.fixes import divisors, nearest
from mha_explorer.core.stages.catalog import CLASSIC, StageId
from mha_explorer.core.stages.records import SOFTMAX_OPS_PER_ELEMENT
from mha_explorer.core.variants.family import (
    AttentionFamily,
    CacheLayout,
    CodeListing,
    HeadWidths,
    VariantField,
)
from mha_explorer.core.variants.grouped.code import grouped_listing
from mha_explorer.core.variants.grouped.params import param_plan
from mha_explorer.core.variants.grouped.shapes import grouped_stages

if TYPE_CHECKING:
    from mha_explorer.core.config.record import MHAConfig
    from mha_explorer.core.stages.records import ParamPlan, Stage


def even_head_counts(d_model: int, cap: int = 1024) -> list[int]:
    """Head counts that divide d_model into heads of even width (what RoPE needs)."""
    return [h for h in range(1, min(d_model, cap) + 1) if d_model % h == 0 and (d_model // h) % 2 == 0]


def grouping_counts(H: int) -> list[int]:
    """Key/value head counts that make GQA of H heads: the divisors strictly between 1 and H."""
    return [d for d in divisors(H) if 1 < d < H]


def gqa_default(H: int, Hkv: int) -> int:
    """The key/value heads a switch to GQA picks: the current ones when they already group,
    else the count nearest H/4. With none between 1 and H (H prime or tiny) it returns 2,
    and the config's validation says why GQA cannot work for this H."""
    inner = grouping_counts(H)
    if Hkv in inner:
        return Hkv
    return min(inner, key=lambda d: (abs(d - H / 4), d)) if inner else 2


FIELDS = (
    VariantField("head_dim", "d_k", "head width (d_k)", "--head-dim", "N", "D/H",
                 "each head's query, key and value width; D/H by default (a model may use wider "
                 "heads: 256 where D/H is 160)", 4_096),
    VariantField("norms", "", "RMSNorm on x, q and k", "--rms-norms", "", "off",
                 "RMSNorm on the layer's input and on each head's q and k before RoPE (as some decoders do)",
                 kind="bool"),
    VariantField("input_norm", "", "RMSNorm on x", "--rms-input-norm", "", "off",
                 "RMSNorm on the layer's input alone, before the projections (as Llama-style decoders "
                 "do); --rms-norms normalises q and k too", kind="bool"),
)


class GroupedAttention(AttentionFamily):
    key = "grouped"
    title = "Multi-head attention (MHA, GQA, MQA)"
    kinds = ("MHA", "GQA", "MQA")
    kind_tips = {
        "MHA": "every query head has its own key/value head (Hkv = H)",
        "GQA": "groups of query heads share a key/value head (1 < Hkv < H)",
        "MQA": "all query heads share one key/value head (Hkv = 1)",
    }
    fields = FIELDS
    compute_module = "mha_explorer.core.variants.grouped.compute"
    classic_maps = frozenset(CLASSIC)
    classic_diagrams = frozenset(CLASSIC)
    rope_inputs = ((StageId.transpose, "Q"), (StageId.transpose, "K"))

    def kind(self, cfg: MHAConfig) -> str:
        if cfg.Hkv == cfg.H:
            return "MHA"
        return "MQA" if cfg.Hkv == 1 else "GQA"

    def changes_for(self, kind: str, cfg: MHAConfig) -> dict[str, Any]:
        kv = {"MHA": None, "MQA": 1}.get(kind, gqa_default(cfg.H, cfg.Hkv))
        return {"n_kv_heads": kv}

    def kv_heads_rule(self, kind: str) -> str:
        return {"MHA": "all", "MQA": "one"}.get(kind, "free")

    def check(self, cfg: MHAConfig, owned: bool) -> None:
        """RoPE turns pairs of numbers, so it needs an even head width."""
        if not owned or not cfg.positions_spec.rotates_qk or cfg.d_k % 2 == 0:
            return
        if cfg.head_dim is not None:
            raise ConfigError("head_dim", f"RoPE turns pairs of numbers but each head has d_k = "
                              f"{cfg.d_k}, an odd width; try {cfg.d_k - 1} or {cfg.d_k + 1}",
                              [{"head_dim": w} for w in (cfg.d_k - 1, cfg.d_k + 1) if w >= 2])
        fixes = nearest(even_head_counts(cfg.d_model), cfg.n_heads)
        raise ConfigError(
            "positions", f"RoPE turns pairs of numbers but each head has d_k = {cfg.d_k}, an odd width; "
            + (f"try {' or '.join(map(str, fixes))} heads, or " if fixes else "try ")
            + "sinusoidal positions",
            [{"n_heads": h} for h in fixes] + [{"positions": "sinusoidal"}],
        )

    def describe(self, cfg: MHAConfig) -> str:
        if cfg.head_dim is None and not cfg.normed_input:
            return ""
        return (f"in effect: {cfg.H} heads of d_k {cfg.d_k} (queries {cfg.q_dim} wide, D {cfg.d_model})"
                + ("; RMSNorm on x, q and k" if cfg.norms else "; RMSNorm on x" if cfg.normed_input else ""))

    def widths(self, cfg: MHAConfig) -> HeadWidths:
        return HeadWidths(cfg.d_k, cfg.d_k, cfg.Hkv)

    def rope_width(self, cfg: MHAConfig) -> int:
        return cfg.d_k

    def stages(self, cfg: MHAConfig) -> tuple[Stage, ...]:
        return grouped_stages(cfg)

    def params(self, cfg: MHAConfig) -> ParamPlan:
        return param_plan(cfg)

    def cache(self, cfg: MHAConfig) -> CacheLayout:
        B, Hkv, dk = cfg.batch, cfg.Hkv, cfg.d_k
        return CacheLayout(("K", "V"), ("B", "Hkv", "S_t", "d_k"), (Hkv * dk, Hkv * dk), (B, Hkv), dk,
                           "2 × Hkv × d_k", f"2 × {Hkv:,} × {dk:,}")

    def step_flops(self, cfg: MHAConfig, rows: int, keys: int) -> dict[StageId, int]:
        B, D, kvD, H, dk, bias = cfg.batch, cfg.d_model, cfg.kv_dim, cfg.H, cfg.d_k, cfg.bias
        return {
            StageId.project: 2 * B * rows * D * (D + 2 * kvD) + (B * rows * (D + 2 * kvD) if bias else 0),
            StageId.scores: 2 * B * H * rows * keys * dk + B * H * rows * keys,
            StageId.softmax: SOFTMAX_OPS_PER_ELEMENT * B * H * rows * keys,
            StageId.weighted_sum: 2 * B * H * rows * keys * dk,
            StageId.output: 2 * B * rows * D * D + (B * rows * D if bias else 0),
        }

    def weights_read(self, cfg: MHAConfig) -> int:
        return self.params(cfg).total

    def reference_code(self, cfg: MHAConfig) -> CodeListing:
        return grouped_listing(cfg)


GROUPED = GroupedAttention()
