"""FlashAttention-style tiles as plain arithmetic (no torch).

Attention is computed in tiles of Br query rows × Bc keys. A tile the mask hides
entirely is never computed; a tile the mask cuts through is computed with the
mask applied; the rest are computed whole. The running row max m, the running
sum l and a Br × d_k output accumulator are all that live between tiles, so the
peak memory grows with T·d, not with the T·S matrix the full computation holds.

The classification is closed-form for causal masks (either alignment) and
sliding windows, so the counts answer instantly even for a million tokens;
strided and global-token masks fall back to building the mask a row block at
a time, up to ``SCAN_MAX_CELLS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.plan.tile_kinds import FULL, PARTIAL, SKIPPED
from mha_explorer.core.plan.tile_kinds import TILE_STATE_NAMES as TILE_STATE_NAMES  # its old home
from mha_explorer.core.specs.masks import MaskSpec
from mha_explorer.core.stages.records import SOFTMAX_OPS_PER_ELEMENT
from mha_explorer.core.system.typed_input import TypedInputError, whole_number
from mha_explorer.core.variants.registry import family_of

MAX_BLOCK = 1 << 20
SCAN_MAX_CELLS = 1 << 28  # strided / global masks: the most mask cells scanned for the counts
GRID_MAX_TILES = 1 << 20  # the most tiles ``tile_states`` builds for a picture
SCAN_CHUNK_CELLS = 1 << 20  # mask cells built at once while scanning


def parse_block(text: str) -> tuple[int, int]:
    """'64,32' -> (64, 32); '64' -> (64, 64). ValueError with a one-line reason."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) == 1:
        parts *= 2
    if len(parts) != 2:
        raise ValueError(f"'{text}' is not BR,BC (two whole numbers, e.g. 64,64)")
    try:
        br, bc = (whole_number(p) for p in parts)
    except TypedInputError:
        raise ValueError(f"'{text}' is not BR,BC (two whole numbers, e.g. 64,64)") from None
    check_block((br, bc))
    return br, bc


def check_block(block: tuple[int, int]) -> None:
    for name, size in zip(("Br", "Bc"), block, strict=True):
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError("block", f"block size {name} must be a positive whole number, got {size!r}")
        if size > MAX_BLOCK:
            raise ConfigError("block", f"block size {name} {size:,} is above the cap of {MAX_BLOCK:,}")


def _closed_form(spec: MaskSpec) -> bool:
    return spec.stride is None and not spec.global_tokens


def _key_span(spec: MaskSpec, i: np.ndarray, T: int, S: int) -> tuple[np.ndarray, np.ndarray]:
    """Keys lo..hi (inclusive) that query row i sees, for causal/window masks."""
    a = i + spec.offset(T, S)  # the key aligned with row i
    big = np.int64(1) << 62
    hi = a if spec.causal else (a + spec.window - 1 if spec.window is not None else a * 0 + big)
    lo = a - spec.window + 1 if spec.window is not None else a * 0 - big
    return lo, hi


def _col_range(lo: np.ndarray, hi: np.ndarray, Bc: int, S: int) -> tuple[np.ndarray, np.ndarray]:
    """First and last column-block index whose keys meet [lo, hi] (first > last: none)."""
    n_c = -(-S // Bc)
    first = np.where(lo <= 0, 0, np.minimum(lo, S) // Bc)
    first = np.where(lo > S - 1, n_c, first)
    last = np.where(hi < 0, -1, np.minimum(hi, S - 1) // Bc)
    return first, last


def _inner_range(lo: np.ndarray, hi: np.ndarray, Bc: int, S: int) -> tuple[np.ndarray, np.ndarray]:
    """First and last column block lying wholly inside [lo, hi]."""
    n_c = -(-S // Bc)
    first = np.where(lo <= 0, 0, -(-np.minimum(lo, S) // Bc))  # c0 = k·Bc >= lo
    # the block's last key min((k+1)·Bc, S) - 1 <= hi
    last = np.where(hi >= S - 1, n_c - 1, (np.maximum(hi, -1) + 1) // Bc - 1)
    return first, last


def _row_block_ranges(spec: MaskSpec, T: int, S: int, Br: int, Bc: int):
    """Per row block: the column-block ranges it touches and that it sees whole."""
    r0 = np.arange(0, T, Br, dtype=np.int64)
    r1 = np.minimum(r0 + Br, T)
    lo_first, hi_first = _key_span(spec, r0, T, S)
    lo_last, hi_last = _key_span(spec, r1 - 1, T, S)
    any_first, any_last = _col_range(lo_first, hi_last, Bc, S)  # the union of the rows' spans
    all_first, all_last = _inner_range(lo_last, hi_first, Bc, S)  # the common part
    return any_first, any_last, all_first, all_last


def tile_mask(spec: MaskSpec, r0: int, r1: int, c0: int, c1: int, T: int, S: int) -> np.ndarray | None:
    """Bool [r1 - r0, c1 - c0]: the part of ``spec.visible`` one tile covers, built
    for that tile only. None when nothing is masked."""
    if not spec.masks_anything:
        return None
    i = np.arange(r0, r1)[:, None] + spec.offset(T, S)  # [r, 1] aligned query index
    j = np.arange(c0, c1)[None, :]  # [1, c]
    d = i - j  # [r, c]
    ok = np.ones((r1 - r0, c1 - c0), dtype=bool)
    if spec.window is not None:
        ok &= (d < spec.window) if spec.causal else (np.abs(d) < spec.window)
    if spec.stride is not None:
        ok &= (d % spec.stride) == 0
    if spec.global_tokens and spec.sparse:  # the same rule, in the same order, as spec.visible
        g = spec.global_tokens
        ok |= j < g
        ok |= (i >= 0) & (i < g)
    if spec.causal:
        ok &= d >= 0  # last: nothing opens the future
    return ok


def tile_states(spec: MaskSpec, T: int, S: int, block: tuple[int, int]) -> np.ndarray:
    """Int8 [row blocks, column blocks]: SKIPPED, PARTIAL or FULL per tile."""
    check_block(block)
    Br, Bc = block
    n_r, n_c = -(-T // Br), -(-S // Bc)
    if n_r * n_c > GRID_MAX_TILES:
        raise ConfigError("block", f"{n_r:,} × {n_c:,} tiles is too many to draw; use larger blocks")
    if not spec.masks_anything:
        return np.full((n_r, n_c), FULL, np.int8)
    if not _closed_form(spec):
        return _scan_states(spec, T, S, Br, Bc)
    any_first, any_last, all_first, all_last = _row_block_ranges(spec, T, S, Br, Bc)
    k = np.arange(n_c)[None, :]  # [1, n_c]
    touched = (k >= any_first[:, None]) & (k <= any_last[:, None])  # [n_r, n_c]
    whole = (k >= all_first[:, None]) & (k <= all_last[:, None])  # [n_r, n_c]
    return np.where(whole, FULL, np.where(touched, PARTIAL, SKIPPED)).astype(np.int8)


def _scan_groups(spec: MaskSpec, T: int, S: int, Br: int, Bc: int,
                 progress: Callable[[float], None] | None = None):
    """The tile states of strided or global-token masks, a group of row blocks at a time:
    int8 [row blocks in the group, column blocks]. Each group builds about SCAN_CHUNK_CELLS
    mask cells, so scanning holds megabytes whatever the tile count."""
    if T * S > SCAN_MAX_CELLS:
        raise ConfigError("block", f"tiles of strided or global-token masks are counted for up to "
                          f"{SCAN_MAX_CELLS:,} mask cells; T·S is {T * S:,}")
    n_c = -(-S // Bc)
    widths = np.minimum(Bc, S - np.arange(n_c) * Bc)  # [n_c] keys per column block
    per = max(1, SCAN_CHUNK_CELLS // (Br * n_c * Bc))  # row blocks per group
    for r0 in range(0, T, per * Br):
        r1 = min(r0 + per * Br, T)
        g = -(-(r1 - r0) // Br)
        vis = np.zeros((g * Br, n_c * Bc), bool)  # [g·Br, n_c·Bc], padded with hidden cells
        vis[:r1 - r0, :S] = spec.visible(r0, r1, T, S)
        counts = vis.reshape(g, Br, n_c, Bc).sum(axis=(1, 3), dtype=np.int32)  # [g, n_c] visible cells
        heights = np.minimum(Br, (r1 - r0) - np.arange(g) * Br)  # [g] rows per row block
        whole = counts == heights[:, None] * widths[None, :]
        yield np.where(whole, FULL, np.where(counts > 0, PARTIAL, SKIPPED)).astype(np.int8)
        if progress is not None:
            progress(r1 / T)


def _scan_states(spec: MaskSpec, T: int, S: int, Br: int, Bc: int) -> np.ndarray:
    return np.concatenate(list(_scan_groups(spec, T, S, Br, Bc)))


def _scan_totals(spec: MaskSpec, T: int, S: int, Br: int, Bc: int,
                 progress: Callable[[float], None] | None = None) -> tuple[int, int, int]:
    """(computed tiles, partial tiles, cells in computed tiles), counted group by group and
    never kept whole: a grid of 1×1 tiles over 16,384² keys is 268 M states."""
    cols = np.minimum(Bc, S - np.arange(-(-S // Bc)) * Bc)[None, :]  # [1, n_c] keys per column block
    computed = partial = cells = row_block = 0
    for states in _scan_groups(spec, T, S, Br, Bc, progress):
        rows = np.minimum(Br, T - (row_block + np.arange(states.shape[0])) * Br)[:, None]  # [g, 1]
        row_block += states.shape[0]
        seen = states != SKIPPED
        computed += int(seen.sum())
        partial += int((states == PARTIAL).sum())
        cells += int((seen * rows * cols).sum())
    return computed, partial, cells


def tile_counts(spec: MaskSpec, T: int, S: int, block: tuple[int, int]) -> tuple[int, int, int]:
    """(total, computed, partial) tiles of one batch element and head."""
    check_block(block)
    Br, Bc = block
    n_r, n_c = -(-T // Br), -(-S // Bc)
    total = n_r * n_c
    if not spec.masks_anything:
        return total, total, 0
    if not _closed_form(spec):
        return (total, *_scan_totals(spec, T, S, Br, Bc)[:2])
    any_first, any_last, all_first, all_last = _row_block_ranges(spec, T, S, Br, Bc)
    touched = np.maximum(0, any_last - any_first + 1)
    whole = np.maximum(0, all_last - all_first + 1)
    return total, int(touched.sum()), int((touched - whole).sum())


@dataclass(frozen=True)
class TilePlan:
    block: tuple[int, int]
    row_blocks: int
    col_blocks: int
    blocks_total: int  # per batch element and head: the mask is the same for all of them
    blocks_computed: int
    blocks_partial: int  # computed with the mask applied inside the tile
    heads_times_batch: int
    peak_bytes: int  # Q, K, V, O and one row block's working tiles
    peak_terms: dict[str, int]
    full_matrix_bytes: int  # B·H·T·S at the dtype
    flops: int  # scores, softmax and A·V of the whole matrix: the same either way
    flops_tiled: int  # the same per-cell count over the computed tiles only

    @property
    def blocks_skipped(self) -> int:
        return self.blocks_total - self.blocks_computed

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["block"] = list(self.block)
        d["blocks_skipped"] = self.blocks_skipped
        return d


def peak_terms(cfg: MHAConfig, block: tuple[int, int]) -> dict[str, int]:
    """What the tiled path holds at its peak, in bytes at the config's dtype, with the head
    widths the config's family really uses (a latent config's d_n + d_r keys, d_v values)."""
    w = family_of(cfg).widths(cfg)
    B, H, T, S, e = cfg.batch, cfg.H, cfg.T, cfg.S, cfg.elem_bytes
    Br, Bc = min(block[0], T), min(block[1], S)
    return {
        "Q and O": B * H * T * (w.qk + w.v) * e,
        "K and V": B * w.kv_heads * S * (w.qk + w.v) * e,
        "row block of Q and its accumulator": B * H * Br * (w.qk + w.v) * e,
        "m and l": 2 * B * H * Br * e,
        "score tile and its exponentials": 2 * B * H * Br * Bc * e,
        "tile mask": Br * Bc,  # one byte per bool
    }


def cell_flops(qk: int, v: int | None = None) -> int:
    """FLOPs per (query, key) cell: q·k (2·qk), scale (1), softmax, and p·v (2·v)."""
    return 2 * qk + 1 + SOFTMAX_OPS_PER_ELEMENT + 2 * (qk if v is None else v)


def tile_plan(cfg: MHAConfig, block: tuple[int, int],
              progress: Callable[[float], None] | None = None) -> TilePlan:
    """The tile arithmetic of ``cfg``; ``progress`` hears the fraction scanned when a strided
    or global-token mask has to be scanned (seconds for hundreds of millions of tiles)."""
    check_block(block)
    Br, Bc = block
    T, S = cfg.T, cfg.S
    spec = cfg.mask_spec
    n_r, n_c = -(-T // Br), -(-S // Bc)
    if spec.masks_anything and not _closed_form(spec):  # one pass for the counts and the cells
        total = n_r * n_c
        computed, partial, computed_cells = _scan_totals(spec, T, S, Br, Bc, progress)
    else:
        total, computed, partial = tile_counts(spec, T, S, block)
        computed_cells = _computed_cells(spec, T, S, block, computed == total)
    terms = peak_terms(cfg, block)
    bh = cfg.batch * cfg.H
    w = family_of(cfg).widths(cfg)
    per_cell = cell_flops(w.qk, w.v)
    return TilePlan(
        block=(Br, Bc), row_blocks=n_r, col_blocks=n_c, blocks_total=total,
        blocks_computed=computed, blocks_partial=partial, heads_times_batch=bh,
        peak_bytes=sum(terms.values()), peak_terms=terms,
        full_matrix_bytes=bh * T * S * cfg.elem_bytes,
        flops=bh * T * S * per_cell, flops_tiled=bh * computed_cells * per_cell,
    )


def _computed_cells(spec: MaskSpec, T: int, S: int, block: tuple[int, int], every_tile: bool) -> int:
    """Query-key cells inside computed tiles (each computed tile costs its whole area)."""
    if every_tile:
        return T * S
    Br, Bc = block
    if not _closed_form(spec):
        return _scan_totals(spec, T, S, Br, Bc)[2]
    any_first, any_last, _, _ = _row_block_ranges(spec, T, S, Br, Bc)
    rows = np.minimum(Br, T - np.arange(0, T, Br))
    # keys covered by blocks first..last: the last block may be short
    key_end = np.minimum((any_last + 1) * Bc, S)
    keys = np.where(any_last >= any_first, key_end - any_first * Bc, 0)
    return int((rows * keys).sum())
