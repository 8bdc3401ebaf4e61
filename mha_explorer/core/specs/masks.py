"""Which keys each query may see: the one mask description the plan, the engine, decoding,
tiles and the maps all read (no torch)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy loads when rows are counted, not with the plan
    import numpy as np


@dataclass(frozen=True)
class MaskSpec:
    """Which keys each query may see.

    ``causal`` with its ``alignment`` ("top-left" as torch's is_causal, or
    "bottom-right" as when decoding with a cache): query row i sits at position
    p = i + offset. The sparse pattern is built from the distance d = p − j:
    ``window`` W keeps the last W keys up to the query itself when causal
    (Mistral-style: j in p−W+1..p), and W on each side otherwise (|d| < W);
    ``stride`` K keeps only keys whose distance is a multiple of K (strided; with a
    window, a dilated window of W positions holding every K-th key);
    ``global_tokens`` N adds the first N positions: every query sees them and they
    see every key (Longformer/BigBird local + global). Causal is applied last, so a
    global token never lets a query see its future. Masks are built per block of
    rows, never as a whole T×S matrix.
    """

    causal: bool = False
    alignment: str = "top-left"
    window: int | None = None
    stride: int | None = None
    global_tokens: int = 0

    @property
    def masks_anything(self) -> bool:
        return self.causal or self.window is not None or self.stride is not None

    @property
    def sparse(self) -> bool:
        """A pattern beyond causal: window or stride (global tokens only widen one)."""
        return self.window is not None or self.stride is not None

    def offset(self, T: int, S: int) -> int:
        """Query i lines up with key i + offset: 0 top-left, S - T bottom-right."""
        return S - T if self.alignment == "bottom-right" else 0

    def visible(self, r0: int, r1: int, T: int, S: int):
        """Bool [r1 - r0, S]: True where query row i in [r0, r1) may see key j.

        None when nothing is masked. Only the rows asked for are ever built.
        """
        if not self.masks_anything:
            return None
        import numpy as np  # here, not at import: the shapes table needs no numpy

        p = np.arange(r0, r1)[:, None] + self.offset(T, S)  # [r, 1] query position
        j = np.arange(S)[None, :]  # [1, S]
        # comparisons broadcast straight to bool [r, S]
        ok = np.ones((r1 - r0, S), dtype=bool)
        if self.window is not None:
            ok &= j > p - self.window  # d = p - j < W
            if not self.causal:
                ok &= j < p + self.window  # and -W < d: W on each side
        if self.stride is not None:
            ok &= ((p - j) % self.stride) == 0
        if self.global_tokens and self.sparse:
            g = self.global_tokens
            ok |= j < g  # every query sees the global keys
            ok |= (p >= 0) & (p < g)  # global queries see every key
        if self.causal:
            ok &= j <= p  # last: nothing opens the future
        return ok

    def visible_count(self, T: int, S: int) -> int:
        """How many of the T×S query-key pairs are visible, without building the mask:
        closed form for causal alone, one O(T) pass over the rows otherwise."""
        if not self.masks_anything:
            return T * S
        if not self.sparse:
            # causal: row i sees keys 0..i+offset, clamped to [0, S]
            first = self.offset(T, S) + 1
            return _sum_clamped(first, first + T - 1, S)
        return int(row_counts(self, T, S).sum())


def _sum_clamped(first: int, last: int, S: int) -> int:
    """Sum of min(max(a, 0), S) for a = first..last (whole numbers)."""
    if last < first:
        return 0
    lo, hi = max(first, 1), min(last, S - 1)  # the rising part: a itself
    rising = (lo + hi) * (hi - lo + 1) // 2 if hi >= lo else 0
    flat = max(0, last - max(first, S) + 1) * S  # a >= S: clamped to S
    return rising + flat


def _congruent(lo: np.ndarray, hi: np.ndarray, p: np.ndarray, k: int) -> np.ndarray:
    """How many j in [lo, hi] have (p − j) divisible by k (0 for an empty range)."""
    import numpy as np

    n = (hi - p) // k - (lo - 1 - p) // k  # floor division, right for negative numbers too
    return np.where(hi >= lo, n, 0)


def row_counts(spec: MaskSpec, T: int, S: int) -> np.ndarray:
    """int64 [T]: how many keys each query row sees (S for every row when nothing is masked)."""
    import numpy as np

    if not spec.masks_anything:
        return np.full(T, S, dtype=np.int64)
    p = np.arange(T, dtype=np.int64) + spec.offset(T, S)  # query positions
    last = np.minimum(p, S - 1) if spec.causal else np.full(T, S - 1, dtype=np.int64)
    lo = np.zeros(T, dtype=np.int64)
    hi = last.copy()
    if spec.window is not None:
        lo = np.maximum(lo, p - spec.window + 1)
        if not spec.causal:
            hi = np.minimum(hi, p + spec.window - 1)
    step = spec.stride or 1
    local = _congruent(lo, hi, p, step)
    g = spec.global_tokens if spec.sparse else 0
    if not g:
        return local
    everything = np.maximum(last + 1, 0)  # a global query sees every key up to ``last``
    global_keys = np.clip(np.minimum(last + 1, g), 0, None)
    overlap = _congruent(lo, np.minimum(hi, g - 1), p, step)
    return np.where((p >= 0) & (p < g), everything, local + global_keys - overlap)
