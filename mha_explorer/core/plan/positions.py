"""The positions step of the MHA/GQA/MQA plan, as its own stage (no torch).

Sinusoidal positions come right after the input (X ← X + PE); RoPE comes right after the
transpose, turning Q and K head by head. Latent attention has its own RoPE stage
(core/mla_stages.py), on the decoupled parts only.
"""

from __future__ import annotations

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.specs.positions import ROPE_FORMULA, SINUSOIDAL_FORMULA
from mha_explorer.core.stages.records import Stage, TensorSpec, contiguous_strides

ROPE_OPS_PER_ELEMENT = 3  # x·cos + rotate_half(x)·sin


def _t(name: str, dims: tuple[str, ...], shape: tuple[int, ...], e: int) -> TensorSpec:
    return TensorSpec(name, dims, shape, contiguous_strides(shape), True, True, e)


LEARNED_FORMULA = "X ← X + P[p]   (P: a learned table of one row per position)"


def sinusoidal_stage(cfg: MHAConfig) -> Stage | None:
    """Stage "positions", after "input"; None unless positions are added to X
    (sinusoidal, or a learned table as GPT-2 and BERT have)."""
    if cfg.positions not in ("sinusoidal", "learned"):
        return None
    B, T, S, D, e = cfg.batch, cfg.T, cfg.S, cfg.d_model, cfg.elem_bytes
    tensors = [_t("PE", ("T", "D"), (T, D), e), _t("X", ("B", "T", "D"), (B, T, D), e)]
    flops = B * T * D
    if cfg.is_cross:
        tensors.append(_t("X_kv", ("B", "S", "D"), (B, S, D), e))
        flops += B * S * D
    if cfg.positions == "learned":
        return Stage(
            "positions", "Add positions (learned)", LEARNED_FORMULA,
            "Each position has its own row of D numbers, learned in training, added to the "
            "token's vector: the same word at two places now gives two different rows.",
            tuple(tensors), flops,
            ("with random weights the table is seeded random numbers, not a trained one",))
    return Stage(
        "positions", "Add positions (sinusoidal)", SINUSOIDAL_FORMULA,
        "Each position gets its own fixed pattern of sines and cosines, fast ones in the first "
        "columns and slow ones in the last, added to the token's vector: the same word at two "
        "places now gives two different rows.",
        tuple(tensors), flops)


def rope_stage(cfg: MHAConfig) -> Stage | None:
    """Stage "rope", after "transpose"; None unless positions are RoPE (and not latent attention)."""
    if cfg.positions != "rope" or cfg.mla:
        return None
    B, T, S, H, Hkv, dk, e = cfg.batch, cfg.T, cfg.S, cfg.H, cfg.Hkv, cfg.d_k, cfg.elem_bytes
    return Stage(
        "rope", "Rotate Q and K by position (RoPE)", ROPE_FORMULA,
        f"Each head's {dk} numbers are read as {dk // 2} pairs, and the pair k of the token at "
        "position p is turned by the angle p·θ_k. Lengths do not change; a query and a key then "
        "meet at an angle that depends only on how far apart they are.",
        (_t("Q", ("B", "H", "T", "d_k"), (B, H, T, dk), e),
         _t("K", ("B", "Hkv", "S", "d_k"), (B, Hkv, S, dk), e)),
        ROPE_OPS_PER_ELEMENT * (B * H * T * dk + B * Hkv * S * dk),
        ("V is not rotated: positions only change which keys a query prefers",))


def rope_width(cfg: MHAConfig) -> int:
    """The per-head width RoPE turns: d_k, or under MLA the decoupled qk_rope_head_dim."""
    if cfg.mla:
        from mha_explorer.core.variants.latent.dims import mla_dims  # MLA's defaults live with MLA

        return mla_dims(cfg).rope
    return cfg.d_k
