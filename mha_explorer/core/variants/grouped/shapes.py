"""The stages of grouped-query attention (MHA, GQA, MQA) as plain integers (no torch).

Input, the Q/K/V projections, view, transpose, [RoPE], scores, softmax, the weighted sum,
merge and W_O, each with its tensors' shapes, strides, FLOPs and the bytes it allocates
(views allocate nothing; the copies torch's kernels make are counted, see copies.py).
"""

from __future__ import annotations

from mha_explorer.core.specs.mask_counts import mask_notes
from mha_explorer.core.specs.positions import ROPE_FORMULA
from mha_explorer.core.stages.catalog import StageId
from mha_explorer.core.stages.records import (
    SOFTMAX_OPS_PER_ELEMENT,
    Stage,
    TensorSpec,
    contiguous_strides,
    is_contiguous,
)
from mha_explorer.core.variants.grouped.copies import copies_in, copy_sentence, kernel_copies
from mha_explorer.core.variants.positions import ROPE_OPS_PER_ELEMENT, positions_stage


def _tensor(name, dims, shape, e, strides=None, allocates=True) -> TensorSpec:
    strides = contiguous_strides(shape) if strides is None else strides
    return TensorSpec(name, tuple(dims), tuple(shape), tuple(strides),
                      is_contiguous(shape, strides), allocates, e)


def _swap(t: tuple, i: int, j: int) -> tuple:
    t = list(t)
    t[i], t[j] = t[j], t[i]
    return tuple(t)




def grouped_stages(cfg) -> tuple[Stage, ...]:
    """The stages in order, with the positions step where positions are computed."""
    stages: list[Stage] = [_input_stage(cfg)]
    added = positions_stage(cfg)
    if added is not None:
        stages.append(added)
    if cfg.normed_input:
        stages.append(_norm_stage(cfg))
    stages += [_project_stage(cfg), *_view_and_transpose(cfg)]
    if cfg.norms:
        stages.append(_qk_norm_stage(cfg))
    if cfg.positions_spec.rotates_qk:
        stages.append(_rope_stage(cfg))
    stages += [_scores_stage(cfg), *_softmax_and_sum(cfg), _merge_stage(cfg), _output_stage(cfg)]
    return tuple(stages)


def _input_stage(cfg) -> Stage:
    B, T, S, D, e = cfg.batch, cfg.T, cfg.S, cfg.d_model, cfg.elem_bytes
    inputs = [_tensor("X", "BTD", (B, T, D), e)]
    if cfg.is_cross:
        inputs.append(_tensor("X_kv", "BSD", (B, S, D), e))
    return Stage(
        StageId.input, "Input tokens",
        "X ∈ ℝ^(B×T×D)" + (", X_kv ∈ ℝ^(B×S×D)" if cfg.is_cross else ""),
        "Each of the T tokens in each of the B sequences is a vector of D numbers."
        + (" Keys and values come from a second sequence of S tokens (cross-attention)."
           if cfg.is_cross else ""),
        tuple(inputs), 0,
    )


NORM_OPS_PER_ELEMENT = 4  # square, sum, scale by 1/rms, multiply by the learned weight


def _norm_stage(cfg) -> Stage:
    """RMSNorm of X before the projections (a decoder's "input layernorm")."""
    B, T, S, D, e = cfg.batch, cfg.T, cfg.S, cfg.d_model, cfg.elem_bytes
    tensors = [_tensor("X", ("B", "T", "D"), (B, T, D), e)]
    if cfg.is_cross:
        tensors.append(_tensor("X_kv", ("B", "S", "D"), (B, S, D), e))
    return Stage(
        StageId.norm, "Normalise the input (RMSNorm)", "X ← X / rms(X) · w",
        "Each token's vector is divided by its root mean square and scaled by a learned weight, "
        "so every token reaches the projections at the same size.",
        tuple(tensors), NORM_OPS_PER_ELEMENT * B * (T + (S if cfg.is_cross else 0)) * D)


def _qk_norm_stage(cfg) -> Stage:
    """RMSNorm of each head's q and k, before RoPE: a per-head scale of d_k numbers."""
    B, T, S, H, Hkv, dk, e = cfg.batch, cfg.T, cfg.S, cfg.H, cfg.Hkv, cfg.d_k, cfg.elem_bytes
    return Stage(
        StageId.qk_norm, "Normalise each head's q and k (RMSNorm)",
        "q ← q / rms(q) · w_q   k ← k / rms(k) · w_k",
        f"Every query and key of {dk} numbers is brought to the same size before the dot product, "
        "so no head's scores can grow without bound; V is left as it is.",
        (_tensor("Q", ("B", "H", "T", "d_k"), (B, H, T, dk), e),
         _tensor("K", ("B", "Hkv", "S", "d_k"), (B, Hkv, S, dk), e)),
        NORM_OPS_PER_ELEMENT * (B * H * T * dk + B * Hkv * S * dk))


def _project_stage(cfg) -> Stage:
    """Q = X W_Qᵀ (+ b); K and V narrower under GQA/MQA; Q is H·d_k wide (D unless the heads
    have a width of their own)."""
    B, T, S, D, H, Hkv, kvD, qD, e = (cfg.batch, cfg.T, cfg.S, cfg.d_model, cfg.H, cfg.Hkv, cfg.kv_dim,
                                      cfg.q_dim, cfg.elem_bytes)
    q_sym = "D" if qD == D else "H·d_k"
    kv_sym = "D" if kvD == D else "Hkv·d_k"
    kv_src = "X_kv" if cfg.is_cross else "X"
    bias = " + b" if cfg.bias else ""
    q = _tensor("Q", ("B", "T", q_sym), (B, T, qD), e)
    k = _tensor("K", ("B", "S", kv_sym), (B, S, kvD), e)
    v = _tensor("V", ("B", "S", kv_sym), (B, S, kvD), e)
    flops = 2 * B * T * D * qD + 2 * 2 * B * S * D * kvD
    if cfg.bias:
        flops += B * T * qD + 2 * B * S * kvD
    return Stage(
        StageId.project, "Project to Q, K, V",
        f"Q = X·W_Qᵀ{bias}   K = {kv_src}·W_Kᵀ{bias}   V = {kv_src}·W_Vᵀ{bias}",
        "Three learned linear maps turn every token into a query, a key and a value."
        + (f" Each of the {H} heads is {cfg.d_k} wide, so Q is {qD} wide, not D = {D}." if qD != D else "")
        + (f" With {Hkv} key/value head{'s' if Hkv > 1 else ''}, K and V are only "
           f"{kvD} wide instead of {qD}." if Hkv != H else ""),
        (q, k, v), flops,
    )


def _view_and_transpose(cfg) -> tuple[Stage, Stage]:
    B, T, S, H, Hkv, dk, e = cfg.batch, cfg.T, cfg.S, cfg.H, cfg.Hkv, cfg.d_k, cfg.elem_bytes
    # view: split the last dim into heads; same storage, same strides underneath
    qv = _tensor("Q", ("B", "T", "H", "d_k"), (B, T, H, dk), e, allocates=False)
    kv = _tensor("K", ("B", "S", "Hkv", "d_k"), (B, S, Hkv, dk), e, allocates=False)
    vv = _tensor("V", ("B", "S", "Hkv", "d_k"), (B, S, Hkv, dk), e, allocates=False)
    view = Stage(
        StageId.view, "Split into heads (view)",
        "Q.view(B, T, H, d_k)   K, V.view(B, S, Hkv, d_k)",
        f"The last axis of {cfg.q_dim} numbers is read as {H} heads of {dk}. No data moves: "
        "only the shape changes.",
        (qv, kv, vv), 0, ("view: no copy",),
    )
    # transpose: heads to axis 1; strides swap, nothing is copied
    qt = _tensor("Q", ("B", "H", "T", "d_k"), (B, H, T, dk), e, _swap(qv.strides, 1, 2), False)
    kt = _tensor("K", ("B", "Hkv", "S", "d_k"), (B, Hkv, S, dk), e, _swap(kv.strides, 1, 2), False)
    vt = _tensor("V", ("B", "Hkv", "S", "d_k"), (B, Hkv, S, dk), e, _swap(vv.strides, 1, 2), False)
    transpose = Stage(
        StageId.transpose, "Heads to the front (transpose)",
        "Q.transpose(1, 2)   K, V.transpose(1, 2)",
        "The heads axis moves in front of the tokens so each head is its own batch of "
        "matrices. Only the strides swap; the data stays where it was, so the result is "
        + ("no longer contiguous." if not qt.contiguous else
           "still contiguous here: the axis that moved has size 1, so the order in memory "
           "is unchanged."),
        (qt, kt, vt), 0, ("transpose: no copy, strides swapped",),
    )
    return view, transpose


def _scores_stage(cfg) -> Stage:
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
        StageId.scores, "Scores Q·Kᵀ / √d_k",
        "scores = Q·Kᵀ / √d_k" + (" + mask" if spec.masks_anything else ""),
        f"Every query is compared with every key by a dot product of {dk} numbers, "
        f"scaled by 1/√{dk} so the values stay in a range softmax handles well. "
        f"This is the T×S grid per head that grows quadratically.",
        (_tensor("scores", ("B", "H", "T", "S"), (B, H, T, S), e),),
        2 * B * H * T * S * dk + B * H * T * S, (*notes, *_copy_note(cfg, StageId.scores)),
        _copied(cfg, StageId.scores),
    )


def _copies(cfg):
    return kernel_copies(batch=cfg.batch, T=cfg.T, S=cfg.S, H=cfg.H, Hkv=cfg.Hkv, d_k=cfg.d_k)


def _copied(cfg, stage: str) -> int:
    return sum(c.elements for c in copies_in(stage, _copies(cfg))) * cfg.elem_bytes


def _copy_note(cfg, stage: str) -> tuple[str, ...]:
    sentence = copy_sentence(stage, _copies(cfg), cfg.elem_bytes)
    return (sentence,) if sentence else ()


def _softmax_and_sum(cfg) -> tuple[Stage, Stage]:
    B, T, S, H, dk, e = cfg.batch, cfg.T, cfg.S, cfg.H, cfg.d_k, cfg.elem_bytes
    softmax = Stage(
        StageId.softmax, "Softmax over keys",
        "A = softmax(scores, dim=-1)",
        "Each row becomes a probability distribution over the keys: non-negative "
        "weights that sum to 1.",
        (_tensor("weights", ("B", "H", "T", "S"), (B, H, T, S), e),),
        SOFTMAX_OPS_PER_ELEMENT * B * H * T * S,
    )
    weighted = Stage(
        StageId.weighted_sum, "Weighted sum A·V",
        "context = A·V",
        "Each query's output is the average of the value vectors, weighted by its "
        "attention row.",
        (_tensor("context", ("B", "H", "T", "d_k"), (B, H, T, dk), e),),
        2 * B * H * T * S * dk, _copy_note(cfg, StageId.weighted_sum), _copied(cfg, StageId.weighted_sum),
    )
    return softmax, weighted


def _merge_stage(cfg) -> Stage:
    """Transpose back (a view) then .contiguous(): the first real copy, unless the
    transpose moved only a size-1 axis (H = 1 or T = 1): then torch returns the same
    tensor and nothing is copied."""
    B, T, H, dk, qD, e = cfg.batch, cfg.T, cfg.H, cfg.d_k, cfg.q_dim, cfg.elem_bytes
    q_sym = "D" if qD == cfg.d_model else "H·d_k"
    back = _tensor("context", ("B", "T", "H", "d_k"), (B, T, H, dk), e,
                   _swap(contiguous_strides((B, H, T, dk)), 1, 2), False)
    merged = _tensor("merged", ("B", "T", q_sym), (B, T, qD), e, allocates=not back.contiguous)
    return Stage(
        StageId.merge, "Merge heads",
        f"context.transpose(1, 2).contiguous().view(B, T, {q_sym})",
        f"The heads go back behind the tokens and their {H} slices of {dk} are laid side "
        f"by side into {qD}. "
        + ("The transposed tensor is not contiguous, so .contiguous() copies it (the "
           "matmuls of the scores and the weighted sum already copied Q, K and V)."
           if merged.allocates else
           "The transposed tensor is already contiguous (a size-1 axis moved), so "
           ".contiguous() returns it as it is and nothing is copied."),
        (back, merged), 0,
        (f"contiguous(): copies B·T·{q_sym} elements" if merged.allocates
         else "contiguous(): no copy needed",),
    )


def _output_stage(cfg) -> Stage:
    B, T, D, qD, e = cfg.batch, cfg.T, cfg.d_model, cfg.q_dim, cfg.elem_bytes
    return Stage(
        StageId.output, "Output projection W_O",
        "Y = merged·W_Oᵀ" + (" + b" if cfg.bias else ""),
        "A final learned linear map mixes the heads' outputs back into a D-wide vector "
        "per token.",
        (_tensor("Y", ("B", "T", "D"), (B, T, D), e),),
        2 * B * T * qD * D + (B * T * D if cfg.bias else 0),
    )


def _rope_stage(cfg) -> Stage:
    """The RoPE stage, right after the transpose: Q and K turned head by head."""
    B, T, S, H, Hkv, dk, e = cfg.batch, cfg.T, cfg.S, cfg.H, cfg.Hkv, cfg.d_k, cfg.elem_bytes
    return Stage(
        StageId.rope, "Rotate Q and K by position (RoPE)", ROPE_FORMULA,
        f"Each head's {dk} numbers are read as {dk // 2} pairs, and the pair k of the token at "
        "position p is turned by the angle p·θ_k. Lengths do not change; a query and a key then "
        "meet at an angle that depends only on how far apart they are.",
        (_tensor("Q", ("B", "H", "T", "d_k"), (B, H, T, dk), e),
         _tensor("K", ("B", "Hkv", "S", "d_k"), (B, Hkv, S, dk), e)),
        ROPE_OPS_PER_ELEMENT * (B * H * T * dk + B * Hkv * S * dk),
        ("V is not rotated: positions only change which keys a query prefers",))
