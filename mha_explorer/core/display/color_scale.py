"""The colour levels of signed heatmaps, as plain numpy.

A signed map is coloured symmetrically around 0; where a few values lie far past the rest
(a trained model's outlier dimensions) the levels clip at a multiple of the median |value|
so the bulk is not all drawn in the middle colour, and the caption says what was clipped.
Kept apart from the maps themselves because every kind of map (classic stages and the
variants' own) reads its levels from here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BULK_SPAN = 10.0  # signed maps: colours reach this many times the median |value| at least
SCALE_SAMPLE = 1 << 18  # values the median is read from, at most (spread evenly)


@dataclass(frozen=True)
class SignedScale:
    """Levels centred on 0 for signed values: the largest |value|, or, where a few values
    lie far past the rest (the outlier dimensions of a trained model's residual stream), ten
    times the median |value|, so that the rest are not all drawn in the middle colour. Random
    normal values never reach ten times their median (that is 6.7 standard deviations)."""

    levels: tuple[float, float]
    peak: float  # the largest finite |value|
    past: float = 0.0  # the share of the values past the levels (read from a sample)

    @property
    def clipped(self) -> bool:
        return self.levels[1] < self.peak

    def words(self, name: str) -> str:
        """The caption's words for the colours: 'colour centred on 0, ±3.68' or the clip."""
        high = self.levels[1]
        if not self.clipped:
            return f"colour centred on 0, ±{high:.3g}"
        share = f"{self.past:.1%} of the values" if self.past >= 0.001 else "a few values"
        return (f"colour centred on 0, clipped at ±{high:.3g} ({BULK_SPAN:g} × the median |{name}|); "
                f"{share} lie past it, up to ±{self.peak:.3g}")


def signed_scale(arrays) -> SignedScale:
    """The colour scale of signed maps (see SignedScale); NaN (masked) cells left out."""
    arrays = [a for a in arrays if a.size]
    _, peak = symmetric_levels(arrays)
    total = sum(a.size for a in arrays)
    stride = max(1, total // SCALE_SAMPLE)
    sample = np.concatenate([np.abs(a.reshape(-1)[::stride]) for a in arrays]) if arrays else \
        np.zeros(0, np.float32)
    sample = sample[np.isfinite(sample)]
    bulk = BULK_SPAN * float(np.median(sample)) if sample.size else 0.0
    if 0 < bulk < peak:
        return SignedScale((-bulk, bulk), peak, float(np.mean(sample > bulk)))
    return SignedScale((-peak, peak), peak)


def symmetric_levels(arrays) -> tuple[float, float]:
    """±max|finite value| over all arrays: a diverging map centred on 0."""
    peak = 0.0
    for a in arrays:
        if not a.size:
            continue
        # fmax/fmin skip NaN without copying the array: a map of 4096 keys per row was
        # masked, copied and made absolute once per head, most of drawing a large trace
        hi, lo = np.fmax.reduce(a, axis=None), np.fmin.reduce(a, axis=None)
        if np.isfinite(hi) and np.isfinite(lo):
            peak = max(peak, float(hi), float(-lo))
            continue
        finite = a[np.isfinite(a)]  # ±inf present (or every value NaN): the slow, exact way
        if finite.size:
            peak = max(peak, float(np.abs(finite).max()))
    peak = peak or 1.0  # an all-zero or all-masked tensor still gets a usable bar
    return -peak, peak
