"""Which step copies data as torch runs the layer, not only where the code says
``.contiguous()``.

Measured (tests/core/test_copies.py watches every aten call the layer makes):
``matmul`` flattens its [B, H, L, d] operands to [B·H, L, d] with ``reshape``;
after the transpose that is a view only when B, H or L is 1, otherwise
``reshape`` clones the operand. So the scores stage copies Q and Kᵀ, the
weighted sum copies V, and GQA/MQA's ``repeat_interleave`` copies K and V out to
all H heads (its result is contiguous, so the matmul then needs no copy of
them). Merge's ``.contiguous()`` copies the context. Plain numbers only: no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from mha_explorer.core.stages.catalog import StageId


@dataclass(frozen=True)
class Copy:
    stage: str  # the stage whose kernel makes it
    tensor: str  # what is copied
    elements: int
    why: str


def flatten_copies(batch: int, heads: int, length: int) -> bool:
    """Whether matmul's reshape of a transposed [B, H, L, d] (stored as [B, L, H, d])
    to [B·H, L, d] must copy: merging B and H needs B's stride to be H times H's,
    i.e. L = 1, unless B or H is 1."""
    return batch > 1 and heads > 1 and length > 1


def kernel_copies(*, batch: int, T: int, S: int, H: int, Hkv: int, d_k: int,
                  d_v: int | None = None) -> tuple[Copy, ...]:
    """Every copy the layer's kernels make, in stage order (one full pass, all rows)."""
    d_v = d_k if d_v is None else d_v
    B, grouped = batch, Hkv != H
    found: list[Copy] = []
    if grouped:
        found.append(Copy(StageId.scores, "K", B * H * S * d_k,
                          f"repeat_interleave copies K from {Hkv} to {H} heads"))
    if flatten_copies(B, H, T):
        found.append(Copy(StageId.scores, "Q", B * H * T * d_k,
                          "matmul reshapes the transposed Q to [B·H, T, d_k]: a copy"))
    if not grouped and flatten_copies(B, H, S):
        found.append(Copy(StageId.scores, "Kᵀ", B * H * S * d_k,
                          "matmul reshapes the transposed Kᵀ to [B·H, d_k, S]: a copy"))
    if grouped:
        found.append(Copy(StageId.weighted_sum, "V", B * H * S * d_v,
                          f"repeat_interleave copies V from {Hkv} to {H} heads"))
    elif flatten_copies(B, H, S):
        found.append(Copy(StageId.weighted_sum, "V", B * H * S * d_v,
                          "matmul reshapes the transposed V to [B·H, S, d_k]: a copy"))
    if H > 1 and T > 1:  # context [B, H, T, d] back to [B, T, H, d]: not contiguous
        found.append(Copy(StageId.merge, "context", B * T * H * d_v,
                          ".contiguous() copies the transposed context"))
    return tuple(found)


def copies_in(stage: str, copies: tuple[Copy, ...]) -> tuple[Copy, ...]:
    return tuple(c for c in copies if c.stage == stage)


def copy_sentence(stage: str, copies: tuple[Copy, ...], element_bytes: int) -> str:
    """'torch copies Q and Kᵀ here (2 × 4 KiB): matmul …' or '' when it copies nothing."""
    from mha_explorer.core.units import format_bytes

    here = copies_in(stage, copies)
    if not here:
        return ""
    names = " and ".join(c.tensor for c in here)
    total = sum(c.elements for c in here) * element_bytes
    reasons = "; ".join(c.why for c in here)
    return f"As torch runs it, this step copies {names} ({format_bytes(total)}): {reasons}."
