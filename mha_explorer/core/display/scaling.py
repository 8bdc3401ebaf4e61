"""Why the scores are divided by √d_k, in the current config's own numbers.

A dot product of d_k terms of unit spread has a spread of about √d_k; softmax of
scores that wide puts almost all the weight on one key. From the scores the
trace already holds (scaled, masked cells -inf) this recovers the raw QKᵀ,
and reports the spread of both and the softmax entropy with and without the
scaling. The width divided by is the one the config's attention family scores with
(``score_width``: d_k, or latent attention's d_n + d_r), never D / H. numpy only: the
engine is never asked for more. For a long sequence it takes most of a second, so the
window works it out on its jobs' thread; the GUI thread only reads what is remembered
(remembered_numbers).
"""

from __future__ import annotations

import math
import threading
import weakref
from dataclasses import dataclass

import numpy as np

from mha_explorer.core.variants.registry import family_of


def score_width(cfg) -> int:
    """The per-head query/key width whose root the config's family divides the scores by."""
    return family_of(cfg).widths(cfg).qk


@dataclass(frozen=True)
class ScalingNumbers:
    width: int  # the scores are QKᵀ / √width (score_width)
    raw_std: float  # spread of QKᵀ over the visible cells
    scaled_std: float  # spread of QKᵀ/√width
    entropy_scaled_bits: float  # mean softmax row entropy, as the layer computes it
    entropy_raw_bits: float  # the same without the division
    uniform_bits: float  # mean log2(visible keys): the entropy of an even spread

    def sentence(self) -> str:
        return (f"Why ÷√{self.width:,}: QKᵀ spreads σ = {self.raw_std:.2f}, ÷√{self.width:,} "
                f"σ = {self.scaled_std:.2f}. Softmax entropy {_bits(self.entropy_scaled_bits)} "
                f"scaled, {_bits(self.entropy_raw_bits)} unscaled (even: {_bits(self.uniform_bits)}): "
                "unscaled, a few keys take all the weight.")


def _bits(value: float) -> str:
    return f"{abs(value) if abs(value) < 0.005 else value:.2f} bits"  # never "-0.00"


def _row_entropy_bits(scores: np.ndarray, finite: np.ndarray) -> np.ndarray:
    """Entropy in bits of softmax over each row's finite cells; [rows] of a [rows, S].

    With x = scores - row max and Z = Σ exp(x): H = (ln Z - Σ exp(x)·x / Z) / ln 2, one
    exp over the cells and no log of each probability (for 16 heads of 128 x 4096
    this ran for seconds on the GUI thread)."""
    x = np.where(finite, scores, -np.inf)
    x -= x.max(axis=1, keepdims=True)  # a row of no finite cell is never passed in
    e = np.exp(x)  # exp(-inf) = 0: hidden keys get nothing
    z = e.sum(axis=1)
    np.copyto(x, 0.0, where=~finite)  # 0·(-inf) would be NaN; they weigh nothing
    weighted = np.einsum("ij,ij->i", e, x)
    return np.maximum(0.0, (np.log(z) - weighted / z) / math.log(2))


_remembered: list = []  # (weakref to the scores' owner, where in it and the width, numbers), newest last
_remembering = threading.Lock()  # one thread fills it while another reads it
REMEMBER = 8


def _place(scaled_scores: np.ndarray, width: int) -> tuple[np.ndarray, tuple]:
    """The array that owns the scores' memory, and where in it (and for which width) they are."""
    owner = scaled_scores if scaled_scores.base is None else scaled_scores.base
    where = (scaled_scores.__array_interface__["data"][0], scaled_scores.shape,
             scaled_scores.strides, scaled_scores.dtype.str, width)
    return owner, where


def remembered_numbers(scaled_scores: np.ndarray, width: int) -> tuple[bool, ScalingNumbers | None]:
    """(True, what scaling_numbers gave) when it has already worked them out for this very
    array, else (False, None). Never computes: the GUI thread asks this."""
    if not isinstance(scaled_scores, np.ndarray):
        return False, None
    owner, where = _place(scaled_scores, width)
    with _remembering:
        for ref, place, numbers in _remembered:
            if place == where and ref() is owner:  # alive, so its memory is still these numbers
                return True, numbers
    return False, None


def scaling_numbers(scaled_scores: np.ndarray, width: int) -> ScalingNumbers | None:
    """From the scores of one sequence divided by √``width``, [H, rows, S] (hidden keys -inf).
    None when no cell is visible. Remembered for the same array: each redraw of the
    stage header asked again, seconds for a long sequence."""
    known, numbers = remembered_numbers(scaled_scores, width)
    if known:
        return numbers
    numbers = _scaling_numbers(scaled_scores, width)
    if not isinstance(scaled_scores, np.ndarray):
        return numbers
    owner, where = _place(scaled_scores, width)
    try:
        ref = weakref.ref(owner)  # an old trace's arrays are not kept for this
    except TypeError:  # an owner that takes no weak reference (a bytes buffer): not kept
        return numbers
    with _remembering:
        _remembered[:] = [e for e in _remembered[-(REMEMBER - 1):] if e[0]() is not None]
        _remembered.append((ref, where, numbers))
    return numbers


def _scaling_numbers(scaled_scores: np.ndarray, width: int) -> ScalingNumbers | None:
    scaled = np.asarray(scaled_scores, dtype=np.float64)
    rows = scaled.reshape(-1, scaled.shape[-1])  # [H·rows, S]
    finite = np.isfinite(rows)
    keep = finite.any(axis=1)  # a row that sees no key has no distribution
    if not keep.any():
        return None
    if not keep.all():
        rows, finite = rows[keep], finite[keep]
    root = math.sqrt(width)
    scaled_std = float(np.std(rows[finite]))
    return ScalingNumbers(
        width=width,
        raw_std=scaled_std * root,  # the spread scales with the scores
        scaled_std=scaled_std,
        entropy_scaled_bits=float(_row_entropy_bits(rows, finite).mean()),
        entropy_raw_bits=float(_row_entropy_bits(rows * root, finite).mean()),
        uniform_bits=float(np.log2(finite.sum(axis=1)).mean()),
    )
