"""Why the tiled peak can be larger than the full matrix, in words worked out from the
numbers (no torch).

The tiled peak counts everything the tiled pass holds, Q, K, V and O included; the full
matrix is only the T × S scores. For short sequences the tensors themselves outweigh the
matrix, so the tiles look worse; the matrix grows as T·S and the tiles as T·d, and this
says where the two cross for the config's own widths.
"""

from __future__ import annotations

from mha_explorer.core.config import CAPS, MHAConfig
from mha_explorer.core.plan.tiles import peak_terms
from mha_explorer.core.units import format_bytes

LONGEST = CAPS["seq"]  # the search for the crossing stops at the longest sequence allowed


def _sizes(cfg: MHAConfig, block: tuple[int, int], T: int) -> tuple[int, int]:
    """(tiled peak, full matrix) in bytes at query length T (S follows T for self-attention)."""
    S = cfg.S if cfg.is_cross else T
    at = cfg.replace(seq=T, tokens=None)
    return sum(peak_terms(at, block).values()), cfg.batch * cfg.H * T * S * cfg.elem_bytes


def crossing_length(cfg: MHAConfig, block: tuple[int, int]) -> int | None:
    """The shortest query length at which the full matrix outweighs the tiled peak; None
    when it never does up to LONGEST (cross-attention with a short S)."""
    lo, hi = 1, 1
    while _sizes(cfg, block, hi)[1] <= _sizes(cfg, block, hi)[0]:
        if hi >= LONGEST:
            return None
        lo, hi = hi, min(hi * 2, LONGEST)
    while lo < hi:  # the full matrix is not larger at lo, larger at hi
        mid = (lo + hi) // 2
        peak, full = _sizes(cfg, block, mid)
        lo, hi = (mid + 1, hi) if full <= peak else (lo, mid)
    return hi


def peak_words(cfg: MHAConfig, block: tuple[int, int]) -> str:
    """One or two sentences comparing the tiled peak with the full matrix for ``cfg``."""
    terms = peak_terms(cfg, block)
    peak, full = sum(terms.values()), cfg.batch * cfg.H * cfg.T * cfg.S * cfg.elem_bytes
    tensors = terms["Q and O"] + terms["K and V"]
    cross = crossing_length(cfg, block)
    grows = "the matrix grows as T·S, the tiles as T·d"
    if full >= peak:
        return (f"At T = {cfg.T:,} the full matrix ({format_bytes(full)}) outweighs the tiled peak "
                f"({format_bytes(peak)}): {grows}, so the longer the sequence the more the tiles save.")
    where = (f"; with these widths the full matrix passes the tiled peak from T = {cross:,}"
             if cross is not None else "")
    return (f"At T = {cfg.T:,} the tiled peak ({format_bytes(peak)}) is larger than the full matrix "
            f"({format_bytes(full)}): the peak counts Q, K, V and O themselves "
            f"({format_bytes(tensors)}, which every pass holds), the matrix only the "
            f"{cfg.T:,} × {cfg.S:,} scores per head. Tiles pay off for long sequences: {grows}{where}.")
