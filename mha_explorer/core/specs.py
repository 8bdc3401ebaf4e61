"""Torch-free descriptions the engine and the stage plan both read.

The config stays a flat record of what the person chose (easy to save, diff and
type on a command line); these small frozen values are the views of it that the
code works with, so the plan's shapes and numbers never disagree with what runs:

- ``WeightsSpec``: where the layer's weights (and its real input) come from;
- ``MaskSpec``: which keys each query may see;
- ``PositionsSpec``: how token positions enter the layer;
- ``AttentionKind``: MHA / GQA / MQA (through kv-heads) or MLA (through its ranks).
"""

from __future__ import annotations

from dataclasses import dataclass

WEIGHT_SOURCES = ("random", "minilm-l6", "lab")
POSITION_KINDS = ("none", "sinusoidal", "learned", "rope")


@dataclass(frozen=True)
class WeightsSpec:
    """``random`` (seeded), ``minilm-l6`` (a trained checkpoint, ``layer`` 1-based) or
    ``lab`` (a model trained in the lab, saved at ``path``)."""

    source: str = "random"
    seed: int = 0
    layer: int = 1
    path: str | None = None

    @property
    def trained(self) -> bool:
        return self.source != "random"


@dataclass(frozen=True)
class PositionsSpec:
    kind: str = "none"
    rope_base: float = 10_000.0

    @property
    def rotates_qk(self) -> bool:
        return self.kind == "rope"

    @property
    def added_to_input(self) -> bool:
        return self.kind in ("sinusoidal", "learned")


@dataclass(frozen=True)
class AttentionKind:
    """``name`` is "MHA", "GQA", "MQA" or "MLA"."""

    name: str

    @property
    def latent(self) -> bool:
        return self.name == "MLA"


@dataclass(frozen=True)
class MaskSpec:
    """Which keys each query may see.

    ``causal`` with its ``alignment`` ("top-left" as torch's is_causal, or
    "bottom-right" as when decoding with a cache); ``window`` W keeps only the last
    W keys up to the causal diagonal (Mistral-style; without causal, W on each
    side); ``stride`` K keeps keys whose distance is a multiple of K (strided /
    dilated); ``global_tokens`` N makes the first N tokens see and be seen by all.
    Masks are built per block of rows, never as a whole T×S matrix.
    """

    causal: bool = False
    alignment: str = "top-left"
    window: int | None = None
    stride: int | None = None
    global_tokens: int = 0

    @property
    def masks_anything(self) -> bool:
        return self.causal or self.window is not None or self.stride is not None

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

        a = np.arange(r0, r1)[:, None] + self.offset(T, S)  # [r, 1] aligned query index
        j = np.arange(S)[None, :]  # [1, S]
        # comparisons broadcast straight to bool [r, S]: no [r, S] array of distances
        ok = (j <= a) if self.causal else np.ones((r1 - r0, S), dtype=bool)
        if self.window is not None:
            ok &= j > a - self.window
            if not self.causal:
                ok &= j < a + self.window
        if self.stride is not None:
            ok &= ((a - j) % self.stride) == 0
        if self.global_tokens:
            g = self.global_tokens
            ok |= j < g  # every query sees the global keys
            ok[np.arange(r0, r1) < g] = True  # global queries see everything
        return ok

    def visible_count(self, T: int, S: int) -> int:
        """How many of the T×S query-key pairs are visible, without building the mask:
        closed form for causal alone, one pass over the rows otherwise."""
        if not self.masks_anything and not self.global_tokens:
            return T * S
        if self.window is None and self.stride is None and not self.global_tokens:
            # causal: row i sees keys 0..i+offset, clamped to [0, S]
            first = self.offset(T, S) + 1
            return _sum_clamped(first, first + T - 1, S)
        return int(self.row_counts(0, T, T, S).sum())

    def row_counts(self, r0: int, r1: int, T: int, S: int):
        """int64 [r1 - r0]: visible keys of each query row, from the rules (no [r, S] array)."""
        import numpy as np

        a = np.arange(r0, r1, dtype=np.int64) + self.offset(T, S)  # aligned query index
        lo, hi = np.zeros_like(a), np.full_like(a, S - 1)  # visible keys lie in [lo, hi]
        if self.causal:
            hi = np.minimum(hi, a)
        if self.window is not None:
            lo = np.maximum(lo, a - self.window + 1)
            if not self.causal:
                hi = np.minimum(hi, a + self.window - 1)
        count = self._in_range(a, lo, hi)
        g = min(self.global_tokens, S)
        if g:
            # plus the global keys 0..g-1 the rules above did not already show
            count = count + g - self._in_range(a, lo, np.minimum(hi, g - 1))
            count[np.arange(r0, r1) < self.global_tokens] = S  # global queries see all
        return count

    def _in_range(self, a, lo, hi):
        """Keys j in [lo, hi] whose distance a - j passes the stride rule."""
        import numpy as np

        if self.stride is None:
            return np.maximum(hi - lo + 1, 0)
        K = self.stride  # multiples of K among the distances a - hi .. a - lo
        n = (a - lo) // K - (a - hi - 1) // K
        return np.where(hi >= lo, n, 0)


def _sum_clamped(first: int, last: int, S: int) -> int:
    """Sum of min(max(a, 0), S) for a = first..last (whole numbers)."""
    if last < first:
        return 0
    lo, hi = max(first, 1), min(last, S - 1)  # the rising part: a itself
    rising = (lo + hi) * (hi - lo + 1) // 2 if hi >= lo else 0
    flat = max(0, last - max(first, S) + 1) * S  # a >= S: clamped to S
    return rising + flat
