"""The positions step every family puts right after the input, as its own stage (no torch).

Sinusoidal positions, or a learned table, are added to X (X ← X + PE). RoPE is not added to
X: each family turns its own queries and keys, in a stage of its own.
"""

from __future__ import annotations

from mha_explorer.core.specs.positions import SINUSOIDAL_FORMULA
from mha_explorer.core.stages.catalog import StageId
from mha_explorer.core.stages.records import Stage, TensorSpec, contiguous_strides

ROPE_OPS_PER_ELEMENT = 3  # x·cos + rotate_half(x)·sin


def _t(name: str, dims: tuple[str, ...], shape: tuple[int, ...], e: int) -> TensorSpec:
    return TensorSpec(name, dims, shape, contiguous_strides(shape), True, True, e)


LEARNED_FORMULA = "X ← X + P[p]   (P: a learned table of one row per position)"


def positions_stage(cfg) -> Stage | None:
    """The positions stage, after the input; None unless positions are added to X
    (sinusoidal, or a learned table as GPT-2 and BERT have)."""
    if not cfg.positions_spec.added_to_input:
        return None
    B, T, S, D, e = cfg.batch, cfg.T, cfg.S, cfg.d_model, cfg.elem_bytes
    tensors = [_t("PE", ("T", "D"), (T, D), e), _t("X", ("B", "T", "D"), (B, T, D), e)]
    flops = B * T * D
    if cfg.is_cross:
        tensors.append(_t("X_kv", ("B", "S", "D"), (B, S, D), e))
        flops += B * S * D
    if cfg.positions == "learned":
        return Stage(
            StageId.positions, "Add positions (learned)", LEARNED_FORMULA,
            "Each position has its own row of D numbers, learned in training, added to the "
            "token's vector: the same word at two places now gives two different rows.",
            tuple(tensors), flops,
            ("with random weights the table is seeded random numbers, not a trained one",))
    return Stage(
        StageId.positions, "Add positions (sinusoidal)", SINUSOIDAL_FORMULA,
        "Each position gets its own fixed pattern of sines and cosines, fast ones in the first "
        "columns and slow ones in the last, added to the token's vector: the same word at two "
        "places now gives two different rows.",
        tuple(tensors), flops)


def position_notes(cfg) -> tuple[str, ...]:
    kind = cfg.positions_spec.kind
    if kind in ("sinusoidal", "learned") and cfg.weights_spec.trained:
        return (f"{kind} positions: the trained layer's input already holds the model's own, "
                "so nothing is added",)
    if kind == "learned":
        return ("learned positions: with random weights a seeded random table (std 0.02) stands "
                "in for the trained one",)
    return ()
