"""Multi-head latent attention (MLA, DeepSeek-V2/V3): one cached latent per token instead of
per-head keys and values.

Its sizes and rules are in ``dims``, its stages (naive and absorbed forms) in ``stages``, its
listing in ``code`` and its torch in ``compute``. This module is the family object the rest of
the app asks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_explorer.core.errors import ConfigError
from mha_explorer.core.stages.catalog import StageId
from mha_explorer.core.stages.records import SOFTMAX_OPS_PER_ELEMENT
from mha_explorer.core.variants.family import (
    AttentionFamily,
    CacheLayout,
    CodeListing,
    HeadWidths,
)
from mha_explorer.core.variants.latent.code import latent_listing
from mha_explorer.core.variants.latent.dims import FIELDS, check_mla, mla_dims, mla_param_plan
from mha_explorer.core.variants.latent.stages import (
    NORM_OPS_PER_ELEMENT,
    ROPE_OPS_PER_ELEMENT,
    absorbed_weight_count,
    mla_absorbed_stages,
    mla_stages,
)
from mha_explorer.core.variants.positions import positions_stage

if TYPE_CHECKING:
    from mha_explorer.core.config.record import MHAConfig
    from mha_explorer.core.stages.records import ParamPlan, Stage



class LatentAttention(AttentionFamily):
    key = "latent"
    title = "Latent attention (MLA)"
    kinds = ("MLA",)
    kind_tips = {"MLA": "latent attention: keys and values rebuilt per head from one cached latent c_KV"}
    fields = FIELDS
    switch = "mla"
    compute_module = "mha_explorer.core.variants.latent.compute"
    computed_whole = True
    classic_maps = frozenset((StageId.input, StageId.scores, StageId.softmax, StageId.weighted_sum,
                              StageId.output))
    # after the softmax its tensors have the classic layout, only the value width differs
    classic_diagrams = frozenset((StageId.weighted_sum, StageId.merge, StageId.output))
    rope_inputs = ((StageId.heads, "q_rope"), (StageId.kv_compress, "k_rope"))
    rope_part = "the decoupled RoPE part of each head"

    def kind(self, cfg: MHAConfig) -> str:
        return "MLA"

    def changes_for(self, kind: str, cfg: MHAConfig) -> dict[str, Any]:
        return {self.switch: True, "n_kv_heads": None}

    def check(self, cfg: MHAConfig, owned: bool) -> None:
        check_mla(cfg)
        if owned and cfg.weights_spec.trained:
            raise ConfigError("weights", "latent attention runs with random weights only; choose random "
                              "weights or turn latent attention off",
                              [{"weights": "random"}, self.leave()])

    def describe(self, cfg: MHAConfig) -> str:
        m = mla_dims(cfg)
        return (f"in effect: r_kv {m.kv_lora_rank}, r_q {m.q_lora_rank or 'none'}, d_n {m.nope}, "
                f"d_r {m.rope}, d_v {m.v}; cached per token: {m.kv_lora_rank} + {m.rope} = "
                f"{m.cached_width} numbers")

    def widths(self, cfg: MHAConfig) -> HeadWidths:
        m = mla_dims(cfg)
        return HeadWidths(m.qk, m.v, cfg.H)  # the naive form: K and V per head

    def rope_width(self, cfg: MHAConfig) -> int:
        return mla_dims(cfg).rope

    def dims(self, cfg: MHAConfig) -> dict[str, int]:
        m = mla_dims(cfg)
        return {"r_kv": m.kv_lora_rank, **({"r_q": m.q_lora_rank} if m.q_lora_rank is not None else {}),
                "d_n": m.nope, "d_r": m.rope, "d_v": m.v}

    def stages(self, cfg: MHAConfig) -> tuple[Stage, ...]:
        latent = mla_stages(cfg)  # input first; positions added to X come right after it
        added = positions_stage(cfg)
        return latent if added is None else (latent[0], added, *latent[1:])

    def params(self, cfg: MHAConfig) -> ParamPlan:
        return mla_param_plan(cfg)

    def cache(self, cfg: MHAConfig) -> CacheLayout:
        m = mla_dims(cfg)
        return CacheLayout(("latent", "k_rope"), ("B", "S_t", "r_kv+d_r"), (m.kv_lora_rank, m.rope),
                           (cfg.batch,), m.cached_width, "(r_kv + d_r)",
                           f"({m.kv_lora_rank:,} + {m.rope:,})")

    def step_flops(self, cfg: MHAConfig, rows: int, keys: int) -> dict[StageId, int]:
        """The absorbed form, as a decoder runs it: only the new tokens are projected and
        compressed; every head scores its latent query against the cached [c_KV | k_rope]
        (r_kv + d_r wide), averages the latents, and W_OUV (W_UV folded into W_O once, not
        counted per step) maps the H latents of r_kv back to D."""
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
            StageId.q_project: query,
            StageId.kv_compress: (2 * B * n * D * w + NORM_OPS_PER_ELEMENT * B * n * r
                                  + (B * n * w if bias else 0)),
        }
        if cfg.positions_spec.rotates_qk:  # the new queries and the new shared key; cached keys stay turned
            terms[StageId.rope] = ROPE_OPS_PER_ELEMENT * (B * H * n * m.rope + B * n * m.rope)
        terms.update({
            StageId.absorb_q: 2 * B * H * n * m.nope * r,
            StageId.scores: 2 * B * H * n * keys * w + B * H * n * keys,
            StageId.softmax: SOFTMAX_OPS_PER_ELEMENT * B * H * n * keys,
            StageId.weighted_sum: 2 * B * H * n * keys * r,
            StageId.output: 2 * B * n * H * r * D + (B * n * D if bias else 0),
        })
        return terms

    def weights_read(self, cfg: MHAConfig) -> int:
        """The absorbed form reads W_OUV [D, H·r_kv] in place of W_UV and W_O; W_UK stays
        inside kv_b_proj."""
        m = mla_dims(cfg)
        stored = mla_param_plan(cfg).total
        return stored - m.H * m.v * m.kv_lora_rank - m.H * m.v * m.D + m.D * m.H * m.kv_lora_rank

    def summary(self, cfg: MHAConfig) -> dict:
        """Naive against absorbed: FLOPs of a forward pass and the absorbed stage list."""
        naive, absorbed = mla_stages(cfg), mla_absorbed_stages(cfg)
        return {"naive_flops": sum(s.flops for s in naive), "absorbed_flops": sum(s.flops for s in absorbed),
                "absorbed_stages": [s.to_dict() for s in absorbed],
                "folded_output_weight": absorbed_weight_count(cfg)}

    def whole_peak(self, cfg: MHAConfig, plan, fixed: int, host_copy: bool) -> int:
        """A run is whole: ``fixed`` (weights, runtime, positions), the weights as they are drawn,
        every stage's tensor of the naive form (the plan's activations), the joint
        [c_KV | k_rope] projection before its norm, the transient copies of the scores (scale,
        mask, softmax), the mask and the float32 host copy of the shown batch element. Checked
        against the peak RSS growth of real runs (benchmarks/bench_variants_memory.py)."""
        m, e = mla_dims(cfg), cfg.elem_bytes
        B, T, S, H = cfg.batch, cfg.T, cfg.S, cfg.H
        cells = B * H * T * S
        acts = plan.memory.activations
        host = acts // e * 4 // B if host_copy else 0  # the shown element, in float32
        joint = B * S * m.cached_width * e
        transient = 2 * cells * e + B * H * S * m.rope * e  # scores copies; k_rope expanded in the cat
        mask = 2 * T * S if cfg.mask_spec.masks_anything else 0
        # the weights are drawn in float32 one matrix at a time (randn, then scaled: two of the
        # largest alive at once) and cast afterwards (the float32 set and the cast one together)
        largest = max(t.count for t in plan.params.terms)
        drawing = largest * 4 + (plan.params.total * 4 if cfg.dtype != "float32" else 0)
        return fixed + drawing + acts + host + joint + transient + mask

    def reference_code(self, cfg: MHAConfig) -> CodeListing:
        return latent_listing(cfg)

    def cache_notes(self, cfg: MHAConfig) -> tuple[str, ...]:
        return ("latent attention caches one tensor per layer, [B, S_t, r_kv + d_r]: the latent c_KV "
                "and the RoPE key shared by all heads, side by side",
                "FLOPs are the absorbed form's: W_UK folded into the query, W_UV into W_O")


LATENT = LatentAttention()
