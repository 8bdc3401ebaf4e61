"""Why the scores are divided by √d_k, in the current config's own numbers.

A dot product of d_k terms of unit spread has a spread of about √d_k; softmax of
scores that wide puts almost all the weight on one key. From the scores the
trace already holds (scaled, masked cells -inf) this recovers the raw QKᵀ,
and reports the spread of both and the softmax entropy with and without the
scaling. numpy only: views call it, the engine is never asked for more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ScalingNumbers:
    d_k: int
    raw_std: float  # spread of QKᵀ over the visible cells
    scaled_std: float  # spread of QKᵀ/√d_k
    entropy_scaled_bits: float  # mean softmax row entropy, as the layer computes it
    entropy_raw_bits: float  # the same without the division
    uniform_bits: float  # mean log2(visible keys): the entropy of an even spread

    def sentence(self) -> str:
        return (f"Why ÷√{self.d_k:,}: QKᵀ spreads σ = {self.raw_std:.2f}, ÷√{self.d_k:,} "
                f"σ = {self.scaled_std:.2f}. Softmax entropy {_bits(self.entropy_scaled_bits)} "
                f"scaled, {_bits(self.entropy_raw_bits)} unscaled (even: {_bits(self.uniform_bits)}): "
                "unscaled, a few keys take all the weight.")


def _bits(value: float) -> str:
    return f"{abs(value) if abs(value) < 0.005 else value:.2f} bits"  # never "-0.00"


def _row_entropy_bits(scores: np.ndarray, finite: np.ndarray) -> np.ndarray:
    """Entropy in bits of softmax over each row's finite cells; [rows] of a [rows, S]."""
    top = np.where(finite, scores, -np.inf).max(axis=1, keepdims=True)
    shifted = np.where(finite, scores - top, -np.inf)
    p = np.exp(shifted)  # exp(-inf) = 0: hidden keys get nothing
    p /= p.sum(axis=1, keepdims=True)
    logs = np.log2(np.maximum(p, np.finfo(p.dtype).tiny))
    return np.maximum(0.0, -(p * logs).sum(axis=1))


def scaling_numbers(scaled_scores: np.ndarray, d_k: int) -> ScalingNumbers | None:
    """From the scaled scores of one sequence, [H, rows, S] (hidden keys -inf).
    None when no cell is visible."""
    scaled = np.asarray(scaled_scores, dtype=np.float64)
    rows = scaled.reshape(-1, scaled.shape[-1])  # [H·rows, S]
    finite = np.isfinite(rows)
    keep = finite.any(axis=1)  # a row that sees no key has no distribution
    if not keep.any():
        return None
    rows, finite = rows[keep], finite[keep]
    root = math.sqrt(d_k)
    visible = rows[finite]
    return ScalingNumbers(
        d_k=d_k,
        raw_std=float(np.std(visible * root)),
        scaled_std=float(np.std(visible)),
        entropy_scaled_bits=float(_row_entropy_bits(rows, finite).mean()),
        entropy_raw_bits=float(_row_entropy_bits(rows * root, finite).mean()),
        uniform_bits=float(np.log2(finite.sum(axis=1)).mean()),
    )
