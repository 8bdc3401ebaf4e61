"""The stage list of multi-head latent attention, naive and absorbed, as plain integers.

Naive (as trained): the latent is expanded to per-head K and V, then attention runs as
usual over [nope | rope] keys. Absorbed (at inference): W_UK is folded into the query
and W_UV into W_O, so attention runs directly against the cached pair [c_KV | k_rope]
and the per-head K and V are never built; the cache is read as it is.

Symbols: r_q, r_kv the ranks, d_n / d_r / d_v the per-head nope, rope and value widths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_explorer.core.stages.catalog import StageId
from mha_explorer.core.stages.records import (
    SOFTMAX_OPS_PER_ELEMENT,
    Stage,
    TensorSpec,
    contiguous_strides,
    is_contiguous,
)
from mha_explorer.core.variants.latent.dims import MLADims, mla_dims

if TYPE_CHECKING:
    from mha_explorer.core.config.record import MHAConfig

NORM_OPS_PER_ELEMENT = 4  # square, sum, scale by 1/rms, multiply by the learned weight
ROPE_OPS_PER_ELEMENT = 3  # x·cos + rotate_half(x)·sin

_S = StageId
NAIVE_STAGE_IDS = (_S.input, _S.q_project, _S.kv_compress, _S.kv_expand, _S.heads, _S.rope, _S.scores,
                   _S.softmax, _S.weighted_sum, _S.merge, _S.output)
ABSORBED_STAGE_IDS = (_S.input, _S.q_project, _S.kv_compress, _S.heads, _S.rope, _S.absorb_q, _S.scores,
                      _S.softmax, _S.weighted_sum, _S.merge, _S.output)


def _t(name, dims, shape, e, strides=None, allocates=True) -> TensorSpec:
    strides = contiguous_strides(tuple(shape)) if strides is None else tuple(strides)
    return TensorSpec(name, tuple(dims), tuple(shape), strides, is_contiguous(tuple(shape), strides),
                      allocates, e)


def _heads_view(name, dims, shape, e, offset_dims=None) -> TensorSpec:
    """[B, L, H, w] transposed to [B, H, L, w] (a view; strides swap); with ``offset_dims``,
    a slice of the last axis of a wider row (split: still a view)."""
    B, Hh, L, w = shape
    full = offset_dims if offset_dims is not None else w
    strides = (L * Hh * full, full, Hh * full, 1)  # of the [B, L, H, full] storage, transposed
    return _t(name, dims, shape, e, strides, allocates=False)


def _common_head(cfg: MHAConfig, m: MLADims) -> list[Stage]:
    """input, q_project, kv_compress: the same in both forms."""
    B, T, S, D, H, e = cfg.batch, cfg.T, cfg.S, cfg.d_model, cfg.H, cfg.elem_bytes
    inputs = [_t("X", "BTD", (B, T, D), e)]
    if cfg.is_cross:
        inputs.append(_t("X_kv", "BSD", (B, S, D), e))
    stages = [Stage(StageId.input, "Input tokens", "X ∈ ℝ^(B×T×D)", "Each token is a vector of D numbers.",
                    tuple(inputs), 0)]
    qw = H * m.qk
    q = _t("Q", ("B", "T", "H·(d_n+d_r)"), (B, T, qw), e)
    if m.q_lora_rank is None:
        stages.append(Stage(
            StageId.q_project, "Query projection", "Q = X·W_Qᵀ",
            f"One linear map gives every head a query of {m.nope} + {m.rope} numbers: a part "
            "compared with the latent keys and a part that carries the position.",
            (q,), 2 * B * T * D * qw))
    else:
        rq = m.q_lora_rank
        flops = 2 * B * T * D * rq + NORM_OPS_PER_ELEMENT * B * T * rq + 2 * B * T * rq * qw
        flops += B * T * rq if cfg.bias else 0
        stages.append(Stage(
            StageId.q_project, "Query down / up projection", "c_Q = RMSNorm(X·W_DQᵀ)   Q = c_Q·W_UQᵀ",
            f"The query goes through a narrow latent of {rq} numbers first (fewer parameters and "
            f"activations in training), then up to {H} heads of {m.nope} + {m.rope}.",
            (_t("c_Q", ("B", "T", "r_q"), (B, T, rq), e), q), flops))
    kv_src = "X_kv" if cfg.is_cross else "X"
    w = m.cached_width
    flops = 2 * B * S * D * w + NORM_OPS_PER_ELEMENT * B * S * m.kv_lora_rank + (B * S * w if cfg.bias else 0)
    stages.append(Stage(
        StageId.kv_compress, "K/V down-projection to the latent",
        f"[c_KV | k_rope] = {kv_src}·W_DKVᵀ   c_KV = RMSNorm(c_KV)",
        f"Each token is compressed to a latent c_KV of {m.kv_lora_rank} numbers plus one RoPE key "
        f"of {m.rope} numbers shared by all heads. This pair is all that is cached: "
        f"{w} numbers per token instead of 2·H·d_k.",
        (_t("c_KV", ("B", "S", "r_kv"), (B, S, m.kv_lora_rank), e),
         _t("k_rope", ("B", "S", "d_r"), (B, S, m.rope), e)), flops,
        ("cached: c_KV and k_rope",)))
    return stages


def _rope_stage(cfg: MHAConfig, m: MLADims) -> Stage:
    B, T, S, H, e = cfg.batch, cfg.T, cfg.S, cfg.H, cfg.elem_bytes
    return Stage(
        StageId.rope, "Rotate the position parts (RoPE)",
        "q_rope ← q_rope·cos + rotate_half(q_rope)·sin   k_rope likewise",
        "Only the decoupled parts are rotated by the token's position; the latent stays "
        "position-free, which is what lets W_UK be folded into the query.",
        (_t("q_rope", ("B", "H", "T", "d_r"), (B, H, T, m.rope), e),
         _t("k_rope", ("B", "1", "S", "d_r"), (B, 1, S, m.rope), e)),
        ROPE_OPS_PER_ELEMENT * (B * H * T * m.rope + B * S * m.rope))


def _attention_tail(cfg: MHAConfig, key_width: int, value_width: int, value_sym: str) -> list[Stage]:
    """softmax and the weighted sum, over T×S per head."""
    B, T, S, H, e = cfg.batch, cfg.T, cfg.S, cfg.H, cfg.elem_bytes
    return [
        Stage(StageId.softmax, "Softmax over keys", "A = softmax(scores, dim=-1)",
              "Each row becomes weights over the keys that sum to 1.",
              (_t("weights", ("B", "H", "T", "S"), (B, H, T, S), e),),
              SOFTMAX_OPS_PER_ELEMENT * B * H * T * S),
        Stage(StageId.weighted_sum, "Weighted sum A·V",
              "context = A·V" if value_sym == "d_v" else "context_lat = A·c_KV",
              "Each query averages the values with its attention row."
              if value_sym == "d_v" else
              "Each query averages the cached latents themselves; W_UV is applied after, inside W_O.",
              (_t("context", ("B", "H", "T", value_sym), (B, H, T, value_width), e),),
              2 * B * H * T * S * value_width),
    ]


def _merge_output(cfg: MHAConfig, width: int, sym: str, w_name: str) -> list[Stage]:
    B, T, D, H, e = cfg.batch, cfg.T, cfg.d_model, cfg.H, cfg.elem_bytes
    back = _t("context", ("B", "T", "H", sym), (B, T, H, width), e,
              (H * T * width, width, T * width, 1), allocates=False)  # transpose(1, 2) of [B, H, T, w]
    merged = _t("merged", ("B", "T", f"H·{sym}"), (B, T, H * width), e, allocates=not back.contiguous)
    flops = 2 * B * T * H * width * D + (B * T * D if cfg.bias else 0)
    return [
        Stage(StageId.merge, "Merge heads", f"context.transpose(1, 2).contiguous().view(B, T, H·{sym})",
              f"The {H} heads' outputs of {width} are laid side by side.", (back, merged), 0),
        Stage(StageId.output, "Output projection", f"Y = merged·{w_name}ᵀ",
              "A final linear map mixes the heads back into D numbers per token."
              + (" Here W_O already contains each head's W_UV (folded once, ahead of time)."
                 if w_name != "W_O" else ""),
              (_t("Y", ("B", "T", "D"), (B, T, D), e),), flops),
    ]


def _score_note(cfg: MHAConfig) -> tuple[str, ...]:
    return ("masked: see the mask counts",) if cfg.mask_spec.masks_anything else ()


def mla_stages(cfg: MHAConfig) -> tuple[Stage, ...]:
    """The naive (training) form: expand the latent to per-head K and V."""
    m = mla_dims(cfg)
    B, T, S, H, e = cfg.batch, cfg.T, cfg.S, cfg.H, cfg.elem_bytes
    stages = _common_head(cfg, m)
    kvw = H * (m.nope + m.v)
    stages.append(Stage(
        StageId.kv_expand, "Up-projection to per-head K and V", "[K_nope | V] = c_KV·W_UKVᵀ",
        f"The latent is expanded again to {H} heads of keys ({m.nope}) and values ({m.v}). "
        "In this form they are rebuilt for every cached token at every step.",
        (_t("KV", ("B", "S", "H·(d_n+d_v)"), (B, S, kvw), e),), 2 * B * S * m.kv_lora_rank * kvw))
    stages.append(Stage(
        StageId.heads, "Split into heads (view, transpose, split)",
        "Q.view(B, T, H, d_n+d_r).transpose(1, 2).split([d_n, d_r])   KV likewise into K_nope, V",
        "All views: the heads move to the front and each row is cut into its parts without a copy.",
        (_heads_view("q_nope", ("B", "H", "T", "d_n"), (B, H, T, m.nope), e, m.qk),
         _heads_view("q_rope", ("B", "H", "T", "d_r"), (B, H, T, m.rope), e, m.qk),
         _heads_view("K_nope", ("B", "H", "S", "d_n"), (B, H, S, m.nope), e, m.nope + m.v),
         _heads_view("V", ("B", "H", "S", "d_v"), (B, H, S, m.v), e, m.nope + m.v)), 0))
    if cfg.positions_spec.rotates_qk:
        stages.append(_rope_stage(cfg, m))
    stages.append(Stage(
        StageId.scores, "Scores over [nope | rope]",
        "scores = [q_nope | q_rope]·[K_nope | k_rope]ᵀ / √(d_n+d_r)",
        f"Queries and keys are {m.nope} + {m.rope} wide; the shared RoPE key is copied to every "
        "head before the product.",
        (_t("Q", ("B", "H", "T", "d_n+d_r"), (B, H, T, m.qk), e),
         _t("K", ("B", "H", "S", "d_n+d_r"), (B, H, S, m.qk), e),
         _t("scores", ("B", "H", "T", "S"), (B, H, T, S), e)),
        2 * B * H * T * S * m.qk + B * H * T * S, _score_note(cfg)))
    stages += _attention_tail(cfg, m.qk, m.v, "d_v")
    stages += _merge_output(cfg, m.v, "d_v", "W_O")
    return tuple(stages)


def mla_absorbed_stages(cfg: MHAConfig) -> tuple[Stage, ...]:
    """The absorbed (inference) form: W_UK folded into the query, W_UV into W_O."""
    m = mla_dims(cfg)
    B, T, S, H, e, r = cfg.batch, cfg.T, cfg.S, cfg.H, cfg.elem_bytes, m.kv_lora_rank
    stages = _common_head(cfg, m)
    stages.append(Stage(
        StageId.heads, "Split the query into heads (view, transpose, split)",
        "Q.view(B, T, H, d_n+d_r).transpose(1, 2).split([d_n, d_r])",
        "Only the query is split into heads; the cached latent is used as it is by every head.",
        (_heads_view("q_nope", ("B", "H", "T", "d_n"), (B, H, T, m.nope), e, m.qk),
         _heads_view("q_rope", ("B", "H", "T", "d_r"), (B, H, T, m.rope), e, m.qk)), 0))
    if cfg.positions_spec.rotates_qk:
        stages.append(_rope_stage(cfg, m))
    stages.append(Stage(
        StageId.absorb_q, "Fold W_UK into the query", "q_lat[h] = q_nope[h]·W_UK[h]",
        f"Since q·(c·W_UKᵀ)ᵀ = (q·W_UK)·cᵀ, each head's query is moved into the latent space "
        f"({m.nope} → {r}) once, instead of expanding every cached token to keys.",
        (_t("q_lat", ("B", "H", "T", "r_kv"), (B, H, T, r), e),), 2 * B * H * T * m.nope * r))
    stages.append(Stage(
        StageId.scores, "Scores against the cache", "scores = [q_lat | q_rope]·[c_KV | k_rope]ᵀ / √(d_n+d_r)",
        f"Every head reads the same cached pair of {m.cached_width} numbers per token, as in "
        "multi-query attention; the scale stays that of the naive form.",
        (_t("scores", ("B", "H", "T", "S"), (B, H, T, S), e),),
        2 * B * H * T * S * m.cached_width + B * H * T * S, _score_note(cfg)))
    stages += _attention_tail(cfg, m.cached_width, r, "r_kv")
    stages += _merge_output(cfg, r, "r_kv", "W_OUV")
    return tuple(stages)


def absorbed_weight_count(cfg: MHAConfig) -> int:
    """Numbers in the folded output matrix W_OUV [H·r_kv, D] (W_UK stays as it is)."""
    m = mla_dims(cfg)
    return m.H * m.kv_lora_rank * m.D
