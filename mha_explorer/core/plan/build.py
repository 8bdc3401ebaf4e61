"""The stage plan: every stage's shapes, strides, FLOPs and bytes as plain integers.

Computed from the config alone, without importing torch, so the shapes table
and ``mha-explorer shapes`` answer instantly even for sizes nobody could run.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.specs.mask_counts import mask_notes
from mha_explorer.core.stages.records import (
    SOFTMAX_OPS_PER_ELEMENT,
    ParamPlan,
    Stage,
    TensorSpec,
    contiguous_strides,
    is_contiguous,
)
from mha_explorer.core.variants.grouped.copies import copies_in, copy_sentence, kernel_copies
from mha_explorer.core.variants.grouped.params import param_plan


@dataclass(frozen=True)
class MemoryPlan:
    kv_cache_per_token: int  # K and V for one token, one layer
    kv_cache_per_sequence: int  # x S, or x min(S, W) under a sliding window (a rolling cache)
    kv_cache_batch: int  # x B
    attention_matrix: int  # B·H·T·S elements at the dtype: the quadratic term
    weights: int
    activations: int  # everything the stages allocate
    kv_cache_tokens: int = 0  # tokens cached per sequence: S, or min(S, W (+ globals))

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Plan:
    config: MHAConfig
    stages: tuple[Stage, ...]
    params: ParamPlan
    memory: MemoryPlan
    dims: dict[str, int] = field(default_factory=dict)  # symbol -> size

    @property
    def total_flops(self) -> int:
        return sum(s.flops for s in self.stages)

    @property
    def stage_ids(self) -> tuple[str, ...]:
        """The stages of this config in order: STAGE_IDS, with "positions" / "rope" put in
        where positions are computed, or latent attention's own list."""
        return tuple(s.id for s in self.stages)

    def stage(self, stage_id: str) -> Stage:
        for s in self.stages:
            if s.id == stage_id:
                return s
        raise KeyError(f"no stage {stage_id!r} in this plan; it has {', '.join(self.stage_ids)}")

    def has_stage(self, stage_id: str) -> bool:
        return any(s.id == stage_id for s in self.stages)

    def to_dict(self) -> dict:
        from mha_explorer.core.plan.variants import mask_summary, mla_summary  # they import this module

        c = self.config
        return {
            "config": c.to_dict(), "variant": c.variant, "dims": dict(self.dims),
            "stages": [s.to_dict() for s in self.stages], "params": self.params.to_dict(),
            "memory": self.memory.to_dict(), "total_flops": self.total_flops,
            "mask": mask_summary(c), "mla": mla_summary(c),
        }


def _tensor(name, dims, shape, e, strides=None, allocates=True) -> TensorSpec:
    strides = contiguous_strides(shape) if strides is None else strides
    return TensorSpec(name, tuple(dims), tuple(shape), tuple(strides),
                      is_contiguous(shape, strides), allocates, e)


def _swap(t: tuple, i: int, j: int) -> tuple:
    t = list(t)
    t[i], t[j] = t[j], t[i]
    return tuple(t)


@functools.lru_cache(maxsize=16)
def build_plan(cfg: MHAConfig) -> Plan:
    """The plan of a config (cached: the engine, the guard and the tables all ask for it)."""
    # the variant modules build on this one's Stage and TensorSpec, so they come in here
    from mha_explorer.core.plan.variants import kv_cache_figures, params_for, stage_list

    mha_stages = () if cfg.mla else (
        _input_stage(cfg), _project_stage(cfg), *_view_and_transpose(cfg), _scores_stage(cfg),
        *_softmax_and_sum(cfg), _merge_stage(cfg), _output_stage(cfg),
    )
    stages = stage_list(cfg, mha_stages)
    B, T, S, kvD, e = cfg.batch, cfg.T, cfg.S, cfg.kv_dim, cfg.elem_bytes
    params = params_for(cfg, param_plan(cfg))
    kv = kv_cache_figures(cfg)  # MLA's latent, and min(S, W) tokens under a window
    memory = MemoryPlan(
        kv_cache_per_token=kv["kv_cache_per_token"],
        kv_cache_per_sequence=kv["kv_cache_per_sequence"],
        kv_cache_batch=kv["kv_cache_batch"],
        attention_matrix=B * cfg.H * T * S * e,
        weights=params.total * e,
        activations=sum(s.bytes for s in stages),
        kv_cache_tokens=kv["kv_cache_tokens"],
    )
    dims = {"B": B, "T": T, "S": S, "D": cfg.d_model, "H": cfg.H, "Hkv": cfg.Hkv, "d_k": cfg.d_k,
            "Hkv·d_k": kvD}
    if cfg.mla:
        from mha_explorer.core.variants.latent.dims import mla_dims

        m = mla_dims(cfg)
        dims.update({"r_kv": m.kv_lora_rank, **({"r_q": m.q_lora_rank} if m.q_lora_rank is not None else {}),
                     "d_n": m.nope, "d_r": m.rope, "d_v": m.v})  # beside the MHA ones views still read
    return Plan(cfg, stages, params, memory, dims)


def _input_stage(cfg: MHAConfig) -> Stage:
    B, T, S, D, e = cfg.batch, cfg.T, cfg.S, cfg.d_model, cfg.elem_bytes
    inputs = [_tensor("X", "BTD", (B, T, D), e)]
    if cfg.is_cross:
        inputs.append(_tensor("X_kv", "BSD", (B, S, D), e))
    return Stage(
        "input", "Input tokens",
        "X ∈ ℝ^(B×T×D)" + (", X_kv ∈ ℝ^(B×S×D)" if cfg.is_cross else ""),
        "Each of the T tokens in each of the B sequences is a vector of D numbers."
        + (" Keys and values come from a second sequence of S tokens (cross-attention)."
           if cfg.is_cross else ""),
        tuple(inputs), 0,
    )


def _project_stage(cfg: MHAConfig) -> Stage:
    """Q = X W_Qᵀ (+ b); K and V narrower under GQA/MQA."""
    B, T, S, D, H, Hkv, kvD, e = (cfg.batch, cfg.T, cfg.S, cfg.d_model, cfg.H, cfg.Hkv, cfg.kv_dim,
                                  cfg.elem_bytes)
    kv_sym = "D" if Hkv == H else "Hkv·d_k"
    kv_src = "X_kv" if cfg.is_cross else "X"
    bias = " + b" if cfg.bias else ""
    q = _tensor("Q", ("B", "T", "D"), (B, T, D), e)
    k = _tensor("K", ("B", "S", kv_sym), (B, S, kvD), e)
    v = _tensor("V", ("B", "S", kv_sym), (B, S, kvD), e)
    flops = 2 * B * T * D * D + 2 * 2 * B * S * D * kvD
    if cfg.bias:
        flops += B * T * D + 2 * B * S * kvD
    return Stage(
        "project", "Project to Q, K, V",
        f"Q = X·W_Qᵀ{bias}   K = {kv_src}·W_Kᵀ{bias}   V = {kv_src}·W_Vᵀ{bias}",
        "Three learned linear maps turn every token into a query, a key and a value."
        + (f" With {Hkv} key/value head{'s' if Hkv > 1 else ''}, K and V are only "
           f"{kvD} wide instead of {D}." if Hkv != H else ""),
        (q, k, v), flops,
    )


def _view_and_transpose(cfg: MHAConfig) -> tuple[Stage, Stage]:
    B, T, S, D, H, Hkv, dk, e = (cfg.batch, cfg.T, cfg.S, cfg.d_model, cfg.H, cfg.Hkv, cfg.d_k,
                                 cfg.elem_bytes)
    # view: split the last dim into heads; same storage, same strides underneath
    qv = _tensor("Q", ("B", "T", "H", "d_k"), (B, T, H, dk), e, allocates=False)
    kv = _tensor("K", ("B", "S", "Hkv", "d_k"), (B, S, Hkv, dk), e, allocates=False)
    vv = _tensor("V", ("B", "S", "Hkv", "d_k"), (B, S, Hkv, dk), e, allocates=False)
    view = Stage(
        "view", "Split into heads (view)",
        "Q.view(B, T, H, d_k)   K, V.view(B, S, Hkv, d_k)",
        f"The last axis of {D} numbers is read as {H} heads of {dk}. No data moves: "
        "only the shape changes.",
        (qv, kv, vv), 0, ("view: no copy",),
    )
    # transpose: heads to axis 1; strides swap, nothing is copied
    qt = _tensor("Q", ("B", "H", "T", "d_k"), (B, H, T, dk), e, _swap(qv.strides, 1, 2), False)
    kt = _tensor("K", ("B", "Hkv", "S", "d_k"), (B, Hkv, S, dk), e, _swap(kv.strides, 1, 2), False)
    vt = _tensor("V", ("B", "Hkv", "S", "d_k"), (B, Hkv, S, dk), e, _swap(vv.strides, 1, 2), False)
    transpose = Stage(
        "transpose", "Heads to the front (transpose)",
        "Q.transpose(1, 2)   K, V.transpose(1, 2)",
        "The heads axis moves in front of the tokens so each head is its own batch of "
        "matrices. Only the strides swap; the data stays where it was, so the result is "
        + ("no longer contiguous." if not qt.contiguous else
           "still contiguous here: the axis that moved has size 1, so the order in memory "
           "is unchanged."),
        (qt, kt, vt), 0, ("transpose: no copy, strides swapped",),
    )
    return view, transpose


def _scores_stage(cfg: MHAConfig) -> Stage:
    B, T, S, H, dk, e = cfg.batch, cfg.T, cfg.S, cfg.H, cfg.d_k, cfg.elem_bytes
    notes = []
    if cfg.Hkv != H:
        notes.append(f"{cfg.variant}: query head i reads key/value head i // {cfg.group_size}")
    notes.extend(mask_notes(cfg))
    spec = cfg.mask_spec
    if spec.masks_anything:
        seen = spec.visible_count(T, S)
        notes.append(f"{seen:,} of {T * S:,} query-key pairs visible ({100 * seen / (T * S):.3g}%)")
    return Stage(
        "scores", "Scores Q·Kᵀ / √d_k",
        "scores = Q·Kᵀ / √d_k" + (" + mask" if spec.masks_anything else ""),
        f"Every query is compared with every key by a dot product of {dk} numbers, "
        f"scaled by 1/√{dk} so the values stay in a range softmax handles well. "
        f"This is the T×S grid per head that grows quadratically.",
        (_tensor("scores", ("B", "H", "T", "S"), (B, H, T, S), e),),
        2 * B * H * T * S * dk + B * H * T * S, (*notes, *_copy_note(cfg, "scores")),
        _copied(cfg, "scores"),
    )


def _copies(cfg: MHAConfig):
    return kernel_copies(batch=cfg.batch, T=cfg.T, S=cfg.S, H=cfg.H, Hkv=cfg.Hkv, d_k=cfg.d_k)


def _copied(cfg: MHAConfig, stage: str) -> int:
    return sum(c.elements for c in copies_in(stage, _copies(cfg))) * cfg.elem_bytes


def _copy_note(cfg: MHAConfig, stage: str) -> tuple[str, ...]:
    sentence = copy_sentence(stage, _copies(cfg), cfg.elem_bytes)
    return (sentence,) if sentence else ()


def _softmax_and_sum(cfg: MHAConfig) -> tuple[Stage, Stage]:
    B, T, S, H, dk, e = cfg.batch, cfg.T, cfg.S, cfg.H, cfg.d_k, cfg.elem_bytes
    softmax = Stage(
        "softmax", "Softmax over keys",
        "A = softmax(scores, dim=-1)",
        "Each row becomes a probability distribution over the keys: non-negative "
        "weights that sum to 1.",
        (_tensor("weights", ("B", "H", "T", "S"), (B, H, T, S), e),),
        SOFTMAX_OPS_PER_ELEMENT * B * H * T * S,
    )
    weighted = Stage(
        "weighted_sum", "Weighted sum A·V",
        "context = A·V",
        "Each query's output is the average of the value vectors, weighted by its "
        "attention row.",
        (_tensor("context", ("B", "H", "T", "d_k"), (B, H, T, dk), e),),
        2 * B * H * T * S * dk, _copy_note(cfg, "weighted_sum"), _copied(cfg, "weighted_sum"),
    )
    return softmax, weighted


def _merge_stage(cfg: MHAConfig) -> Stage:
    """Transpose back (a view) then .contiguous(): the first real copy, unless the
    transpose moved only a size-1 axis (H = 1 or T = 1): then torch returns the same
    tensor and nothing is copied."""
    B, T, D, H, dk, e = cfg.batch, cfg.T, cfg.d_model, cfg.H, cfg.d_k, cfg.elem_bytes
    back = _tensor("context", ("B", "T", "H", "d_k"), (B, T, H, dk), e,
                   _swap(contiguous_strides((B, H, T, dk)), 1, 2), False)
    merged = _tensor("merged", ("B", "T", "D"), (B, T, D), e, allocates=not back.contiguous)
    return Stage(
        "merge", "Merge heads",
        "context.transpose(1, 2).contiguous().view(B, T, D)",
        f"The heads go back behind the tokens and their {H} slices of {dk} are laid side "
        f"by side into {D}. "
        + ("The transposed tensor is not contiguous, so .contiguous() copies it (the "
           "matmuls of the scores and the weighted sum already copied Q, K and V)."
           if merged.allocates else
           "The transposed tensor is already contiguous (a size-1 axis moved), so "
           ".contiguous() returns it as it is and nothing is copied."),
        (back, merged), 0,
        ("contiguous(): copies B·T·D elements" if merged.allocates else "contiguous(): no copy needed",),
    )


def _output_stage(cfg: MHAConfig) -> Stage:
    B, T, D, e = cfg.batch, cfg.T, cfg.d_model, cfg.elem_bytes
    return Stage(
        "output", "Output projection W_O",
        "Y = merged·W_Oᵀ" + (" + b" if cfg.bias else ""),
        "A final learned linear map mixes the heads' outputs back into a D-wide vector "
        "per token.",
        (_tensor("Y", ("B", "T", "D"), (B, T, D), e),),
        2 * B * T * D * D + (B * T * D if cfg.bias else 0),
    )
