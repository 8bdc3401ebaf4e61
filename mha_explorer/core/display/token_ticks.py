"""Which token names an axis shows when they do not all fit: every k-th one.

Shared by the heads panel's axes and the stage diagram's grid, so both thin
the same way. Plain arithmetic on pixel sizes the caller measured: no Qt.
"""

from __future__ import annotations

import math

TOKEN_MAX_CHARS = 12  # longer names end in "…": a word, or a tag like <h1>BIG</h1>


def label_step(count: int, label_px: float, length_px: float) -> int:
    """Show every k-th of ``count`` labels, each needing ``label_px`` along an axis
    ``length_px`` long: the smallest k with no two labels touching."""
    return max(1, math.ceil(count * label_px / max(length_px, 1.0)))


def nice_step(step: int) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50, … that is at least ``step`` (for numbers)."""
    scale = 1
    while True:
        for base in (1, 2, 5):
            if base * scale >= step:
                return base * scale
        scale *= 10


def spaced_positions(count: int, step: int) -> list[int]:
    """Every ``step``-th position from 0, and the last: it takes the place of the one
    before it when the two would be closer than ``step`` (only the first is left when
    the two ends themselves are closer than that)."""
    step = max(1, step)
    if count <= 0:
        return []
    shown = list(range(0, count, step))
    if shown[-1] != count - 1 and count - 1 >= step:
        if count - 1 - shown[-1] < step:
            shown[-1] = count - 1
        else:
            shown.append(count - 1)
    return shown


def elide(text: str, max_chars: int = TOKEN_MAX_CHARS) -> str:
    """``text`` cut to ``max_chars`` characters, the last one "…" when cut."""
    return text if len(text) <= max_chars else text[:max_chars - 1] + "…"

