"""Mask arithmetic without building the mask: visible cells, skipped FLOPs, rolling cache.

Counts follow MaskSpec.visible exactly (the tests compare them cell by cell on small
sizes), but each query row is an interval of keys, thinned by the stride and widened
by the global tokens, so a row's count is a few integer operations: O(T) in all,
vectorised with numpy, for any S.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mha_explorer.core.specs.masks import MaskSpec, row_counts

if TYPE_CHECKING:  # numpy loads when rows are counted, not with the plan

    from mha_explorer.core.config.record import MHAConfig


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
