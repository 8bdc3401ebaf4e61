"""Mask arithmetic without building the mask: visible cells, skipped FLOPs, rolling cache.

Counts follow MaskSpec.visible exactly (the tests compare them cell by cell on small
sizes), but each query row is an interval of keys, thinned by the stride and widened
by the global tokens, so a row's count is a few integer operations: O(T) in all,
vectorised with numpy, for any S.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.specs.masks import MaskSpec
from mha_explorer.core.stages.records import SOFTMAX_OPS_PER_ELEMENT
from mha_explorer.core.variants.latent.dims import mla_dims

if TYPE_CHECKING:  # numpy loads when rows are counted, not with the plan
    import numpy as np


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


@dataclass(frozen=True)
class MaskCounts:
    cells: int  # T·S per head and batch element
    visible: int
    masked: int
    empty_rows: int  # queries that see no key at all
    widest_row: int  # most keys any one query sees

    @property
    def visible_fraction(self) -> float:
        return self.visible / self.cells if self.cells else 0.0


def mask_counts(spec: MaskSpec, T: int, S: int) -> MaskCounts:
    rows = row_counts(spec, T, S)
    visible = int(rows.sum())
    return MaskCounts(T * S, visible, T * S - visible, int((rows == 0).sum()), int(rows.max(initial=0)))


def head_widths(cfg: MHAConfig) -> tuple[int, int]:
    """(query/key width, value width) per head: d_k and d_k, or under MLA's naive form
    d_n + d_r and d_v."""
    if cfg.mla:
        m = mla_dims(cfg)
        return m.qk, m.v
    return cfg.d_k, cfg.d_k


def skipped_flops(cfg: MHAConfig, qk_width: int | None = None, v_width: int | None = None) -> dict[str, int]:
    """FLOPs a sparse kernel would not spend on masked cells, per stage and in total.

    The dense plan counts per cell and head 2·qk_width + 1 (dot product and scale),
    5 (softmax) and 2·v_width (weighted sum); masked cells need none of them. The
    widths default to the config's own (head_widths).
    """
    own_qk, own_v = head_widths(cfg)
    qk_width = own_qk if qk_width is None else qk_width
    v_width = own_v if v_width is None else v_width
    masked = mask_counts(cfg.mask_spec, cfg.T, cfg.S).masked * cfg.batch * cfg.H
    out = {
        "scores": masked * (2 * qk_width + 1),
        "softmax": masked * SOFTMAX_OPS_PER_ELEMENT,
        "weighted_sum": masked * 2 * v_width,
    }
    out["total"] = sum(out.values())
    return out


def cached_tokens(spec: MaskSpec, S: int) -> int:
    """Keys a decoder must keep per sequence: S, or with a window a rolling cache.

    Causal with window W: the last W keys, plus the N global ones (min(S, W + N)).
    Without causal a query reaches W − 1 keys ahead as well: min(S, 2W − 1 + N).
    A stride thins the window but a rolling cache still spans it.
    """
    if spec.window is None:
        return S
    reach = spec.window if spec.causal else 2 * spec.window - 1
    return min(S, reach + spec.global_tokens)


def describe(spec: MaskSpec) -> str:
    """One line for the plan's notes and the map's legend."""
    parts = []
    if spec.window is not None:
        parts.append(f"sliding window {spec.window}: query p sees keys p−{spec.window - 1}..p"
                     if spec.causal else f"window {spec.window}: keys within {spec.window - 1} on each side")
    if spec.stride is not None:
        parts.append(f"stride {spec.stride}: only keys whose distance is a multiple of {spec.stride}")
    if spec.global_tokens and spec.sparse:
        parts.append(f"{spec.global_tokens} global token{'s' if spec.global_tokens > 1 else ''} "
                     "seen by and seeing every position")
    if spec.causal:
        parts.append("causal: never a later key")
    return "; ".join(parts) if parts else "no mask"


def mask_notes(cfg: MHAConfig) -> tuple[str, ...]:
    """What the mask spec hides, in words: the causal rule, then window, stride, globals."""
    spec = cfg.mask_spec
    notes = [causal_note(cfg)] if spec.causal else []
    if spec.window is not None:
        side = "back from the diagonal" if spec.causal else "on each side"
        notes.append(f"sliding window: each query sees at most {spec.window:,} keys {side}")
    if spec.stride is not None:
        notes.append(f"strided: only keys whose distance is a multiple of {spec.stride:,}")
    if spec.global_tokens and spec.masks_anything:
        notes.append(f"the first {spec.global_tokens:,} tokens see and are seen by every token")
    return tuple(notes)


def causal_offset(cfg: MHAConfig) -> int:
    """Query i may see keys 0..i+offset: 0 top-left (torch's is_causal), S-T bottom-right."""
    return cfg.S - cfg.T if cfg.causal_alignment == "bottom-right" else 0


def causal_note(cfg: MHAConfig) -> str:
    if cfg.T == cfg.S:
        return "causal: query i sees keys 0..i"
    if cfg.causal_alignment == "top-left":
        return "causal, top-left aligned (as torch is_causal): query i sees keys 0..i"
    offset = causal_offset(cfg)
    sees = f"0..i+{offset}" if offset > 0 else f"0..i−{-offset}"
    note = f"causal, bottom-right aligned (as when decoding with a cache): query i sees keys {sees}"
    if offset < 0:
        note += f"; rows 0..{-offset - 1} see no key"
    return note
