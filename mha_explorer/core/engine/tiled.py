"""Tiled attention with an online softmax (FlashAttention's arithmetic, in torch).

Rows are taken Br at a time; for each row block the keys are visited Bc at a
time while three running values are kept per row: the largest score so far m,
the sum of exp(score - m) so far l, and the output accumulator, rescaled by
exp(m_old - m_new) whenever m grows. After the last key block, output =
accumulator / l. Only Q, K, V, the output and one row block's tiles are ever in
memory, never the T × S matrix, so this path also serves configs whose full
matrix does not fit. Tiles the mask hides entirely are skipped.

GQA/MQA: the G = H / Hkv query heads that share a key/value head are stacked
as G·Br rows against the shared keys, so K and V are never repeated.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from mha_explorer.core.errors import check_cancel
from mha_explorer.core.plan.tiles import FULL, PARTIAL, SKIPPED, check_block, tile_mask, tile_states
from mha_explorer.core.specs.masks import MaskSpec


@dataclass
class TileEvent:
    """One tile, as the loop leaves it. Tensors cover every batch element and head,
    rows stacked per key/value head: [B, Hkv, G·rows(, d)]."""

    row_block: int
    col_block: int
    rows: tuple[int, int]
    cols: tuple[int, int]
    state: int  # SKIPPED, PARTIAL or FULL
    m: torch.Tensor
    l: torch.Tensor  # noqa: E741 - the name the method gives it
    acc: torch.Tensor


def _tile_state(spec: MaskSpec, rows, cols, T: int, S: int) -> tuple[int, np.ndarray | None]:
    mask = tile_mask(spec, rows[0], rows[1], cols[0], cols[1], T, S)
    if mask is None or mask.all():
        return FULL, None
    return (PARTIAL, mask) if mask.any() else (SKIPPED, None)


def tiled_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask_spec: MaskSpec | None = None,
    block: tuple[int, int] = (64, 64),
    *,
    on_tile: Callable[[TileEvent], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    progress: Callable[[float], None] | None = None,
) -> torch.Tensor:
    """softmax(q·kᵀ/√d_k + mask)·v for q [B, H, T, d_k], k [B, Hkv, S, d_k],
    v [B, Hkv, S, d_v]; returns [B, H, T, d_v]. Rows that see no key give 0.
    ``cancel`` is asked before every tile (a million 1 × 1 tiles take minutes; one tile
    never does) and raises Cancelled; ``progress`` hears the fraction of row blocks done."""
    check_block(block)
    spec = mask_spec or MaskSpec()
    B, H, T, dk = q.shape
    Hkv, S, dv = k.shape[1], k.shape[2], v.shape[-1]
    if H % Hkv:
        raise ValueError(f"{H} query heads cannot share {Hkv} key/value heads")
    G = H // Hkv
    Br, Bc = block
    work = torch.float32 if q.dtype in (torch.float16, torch.bfloat16) else q.dtype
    scale = 1.0 / math.sqrt(dk)
    out = torch.empty(B, H, T, dv, dtype=q.dtype, device=q.device)
    row_blocks = math.ceil(T / Br)
    for ri, r0 in enumerate(range(0, T, Br)):
        r1 = min(r0 + Br, T)
        n = r1 - r0
        qb = q[:, :, r0:r1].reshape(B, Hkv, G * n, dk).to(work)  # [B, Hkv, G·n, d_k]
        row_max = torch.full((B, Hkv, G * n), -math.inf, dtype=work, device=q.device)  # [B, Hkv, G·n]
        row_sum = torch.zeros_like(row_max)  # [B, Hkv, G·n]
        acc = torch.zeros(B, Hkv, G * n, dv, dtype=work, device=q.device)  # [B, Hkv, G·n, d_v]
        for ci, c0 in enumerate(range(0, S, Bc)):
            check_cancel(cancel)
            c1 = min(c0 + Bc, S)
            state, mask = _tile_state(spec, (r0, r1), (c0, c1), T, S)
            if state != SKIPPED:
                row_max, row_sum, acc = _visit(qb, k[:, :, c0:c1], v[:, :, c0:c1], mask, G, scale,
                                               row_max, row_sum, acc)
            if on_tile is not None:
                on_tile(TileEvent(ri, ci, (r0, r1), (c0, c1), state, row_max, row_sum, acc))
        # [B, Hkv, G·n, d_v]; a row that saw no key has row_sum 0 and gives 0
        o = torch.where(row_sum[..., None] > 0, acc / row_sum.clamp_min(1e-30)[..., None], 0.0)
        out[:, :, r0:r1] = o.view(B, H, n, dv).to(q.dtype)  # [B, H, n, d_v]
        if progress is not None:
            progress((ri + 1) / row_blocks)
    return out


def _visit(qb, kb, vb, mask, G, scale, row_max, row_sum, acc):
    """One tile of the online softmax: returns the updated m, l and accumulator."""
    s = (qb @ kb.to(qb.dtype).transpose(-2, -1)) * scale  # [B, Hkv, G·n, c]
    if mask is not None:
        hidden = torch.from_numpy(~mask).to(s.device).repeat(G, 1)  # [G·n, c]: same rows per group
        s = s.masked_fill(hidden, -math.inf)
    m_new = torch.maximum(row_max, s.amax(dim=-1))  # [B, Hkv, G·n]
    # a row with no visible key yet keeps m = -inf; subtract 0 there instead of -inf
    m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
    p = torch.exp(s - m_safe[..., None])  # [B, Hkv, G·n, c]
    alpha = torch.exp(row_max - m_safe)  # how far the old running values shrink
    row_sum = alpha * row_sum + p.sum(dim=-1)
    acc = alpha[..., None] * acc + p @ vb.to(qb.dtype)  # [B, Hkv, G·n, d_v]
    return m_new, row_sum, acc


@dataclass(frozen=True)
class TileRecord:
    """One tile as seen by one batch element and head (numpy, for the views)."""

    row_block: int
    col_block: int
    rows: tuple[int, int]
    cols: tuple[int, int]
    state: int
    m: np.ndarray  # [rows] running row max after this tile
    l: np.ndarray  # noqa: E741 - [rows] running sum of exponentials
    output: np.ndarray  # [rows, d_v] the rescaled output so far: accumulator / l


def record_tiles(q, k, v, mask_spec=None, block=(64, 64), *, batch: int = 0, head: int = 0,
                 max_tiles: int = 4096, cancel: Callable[[], bool] | None = None,
                 progress: Callable[[float], None] | None = None) -> tuple[torch.Tensor, list[TileRecord]]:
    """Run ``tiled_attention`` and keep, for one batch element and query head, every
    tile's m, l and rescaled output (up to ``max_tiles`` tiles; the output is whole)."""
    H, Hkv = q.shape[1], k.shape[1]
    G = H // Hkv
    kv_head, group = divmod(head, G)
    records: list[TileRecord] = []

    def keep(ev: TileEvent) -> None:
        if len(records) >= max_tiles:
            return
        n = ev.rows[1] - ev.rows[0]
        rows = slice(group * n, (group + 1) * n)  # this head's rows among the stacked G·n
        m = ev.m[batch, kv_head, rows].detach().float().cpu().numpy().copy()
        row_sum = ev.l[batch, kv_head, rows].detach().float().cpu().numpy().copy()
        acc = ev.acc[batch, kv_head, rows].detach().float().cpu().numpy()
        with np.errstate(divide="ignore", invalid="ignore"):
            output = np.where(row_sum[:, None] > 0, acc / row_sum[:, None], 0.0).astype(np.float32)
        records.append(TileRecord(ev.row_block, ev.col_block, ev.rows, ev.cols, ev.state, m, row_sum, output))

    out = tiled_attention(q, k, v, mask_spec, block, on_tile=keep, cancel=cancel, progress=progress)
    return out, records


def grid_of(mask_spec: MaskSpec | None, T: int, S: int, block: tuple[int, int]) -> np.ndarray:
    """The tile states as the loop meets them (re-exported for the views' callers)."""
    return tile_states(mask_spec or MaskSpec(), T, S, block)


def max_abs_diff_vs_full(cfg, block: tuple[int, int],
                         on_tile: Callable[[TileEvent], None] | None = None) -> float:
    """The tiled path against SDPA with the same boolean mask, float32, on rows that see at
    least one key (SDPA leaves a row that sees none undefined). Q, K and V are the ones the
    config's family scores (a latent config's per-head [nope | rope] keys and its values)."""
    import torch.nn.functional as F

    from mha_explorer.core.engine.decode import compute_module, layer_tensors  # the engine's layer

    with torch.no_grad():
        q, k, v = compute_module(cfg).attention_inputs(cfg, layer_tensors(cfg))  # [B, H|Hkv, T|S, ·]
        tiled = tiled_attention(q, k, v, cfg.mask_spec, block, on_tile=on_tile)
        visible = cfg.mask_spec.visible(0, cfg.T, cfg.T, cfg.S)
        mask = None if visible is None else torch.from_numpy(visible)
        g = q.shape[1] // k.shape[1]
        full = F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                                              attn_mask=mask)  # [B, H, T, v]
        rows = torch.ones(cfg.T, dtype=torch.bool) if mask is None else mask.any(-1)
        return float((tiled - full)[:, :, rows].abs().max()) if rows.any() else 0.0


__all__ = ["FULL", "PARTIAL", "SKIPPED", "TileEvent", "TileRecord", "grid_of", "max_abs_diff_vs_full",
           "record_tiles", "tiled_attention"]
