"""The heavy steps of one engine run, each cancellable in small pieces.

A projection is computed tile by tile (rows × output columns) and attention one
block of query rows at a time, so ``cancel`` is looked at every few hundred
million floating-point operations and ``progress`` moves during the projections
too. No tensor here is larger than the rows in flight, except what the run keeps.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from mha_explorer.core.errors import Cancelled
from mha_explorer.core.kernels.host import HostCopies
from mha_explorer.core.kernels.positions import add_sinusoidal, apply_rope, query_key_positions
from mha_explorer.core.specs.masks import MaskSpec
from mha_explorer.core.stages.catalog import CLASSIC, StageId
from mha_explorer.core.stages.held import HeldArray

TILE_FLOPS = 1 << 32  # work between two looks at ``cancel``: ~0.05 s at 100 GFLOP/s, 0.2 s at 20
TILE_ROWS = 2048  # rows per tile: tall tiles keep the matmul near full speed


class Work:
    """Cancel checks and progress, counted in floating-point operations."""

    def __init__(self, total_flops: int, cancel: Callable[[], bool] | None,
                 progress: Callable[[float], None] | None):
        self.total = max(1, total_flops)
        self.done = 0
        self._cancel = cancel
        self._progress = progress

    def check(self) -> None:
        if self._cancel is not None and self._cancel():
            raise Cancelled()

    def advance(self, flops: int) -> None:
        self.done += flops
        if self._progress is not None:
            self._progress(min(1.0, self.done / self.total))


class Clock:
    """Per-stage time. On the CPU, wall time between ticks; on a GPU, an event recorded on the
    stream at each tick, so nothing waits for the device stage by stage: the times are read
    (``totals``) once the run has waited for it at its end."""

    def __init__(self, device: str):
        self.device = device
        self._totals: dict[str, float] = {s: 0.0 for s in CLASSIC}
        self._events: list[tuple[str, torch.cuda.Event]] = []
        self._t = time.perf_counter()
        self._last = self._event() if device == "cuda" else None

    @staticmethod
    def _event() -> torch.cuda.Event:
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def tick(self, stage: str) -> None:
        if self._last is not None:
            self._events.append((stage, self._event()))
            return
        now = time.perf_counter()
        # stages beyond the nine (positions, rope, latent attention's) are added as they come
        self._totals[stage] = self._totals.get(stage, 0.0) + now - self._t
        self._t = now

    @property
    def totals(self) -> dict[str, float]:
        """Seconds per stage so far (on a GPU: waits for the last tick's event)."""
        if self._events:
            self._events[-1][1].synchronize()
            for stage, event in self._events:
                seconds = self._last.elapsed_time(event) / 1000  # elapsed_time is in ms
                self._totals[stage] = self._totals.get(stage, 0.0) + seconds
                self._last = event
            self._events.clear()
        return self._totals


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, work: Work) -> torch.Tensor:
    """``F.linear(x, weight, bias)`` for x [nb, n, in], computed tile by tile."""
    nb, n, d_in = x.shape
    d_out = weight.shape[0]
    out = torch.empty(nb, n, d_out, device=x.device, dtype=x.dtype)  # [nb, n, out]
    rows_in = x.reshape(nb * n, d_in)  # [nb·n, in]: a view of the contiguous input
    rows_out = out.view(nb * n, d_out)  # [nb·n, out]
    rows = min(nb * n, TILE_ROWS, max(1, TILE_FLOPS // (2 * d_in * min(d_out, 64))))
    # a wide weight is split by output columns so one tile stays near TILE_FLOPS
    cols = min(d_out, max(64, TILE_FLOPS // (2 * rows * d_in)))
    for r0 in range(0, nb * n, rows):
        r1 = min(nb * n, r0 + rows)
        for c0 in range(0, d_out, cols):
            c1 = min(d_out, c0 + cols)
            work.check()
            w = weight[c0:c1]  # [c, in]
            b = bias[c0:c1] if bias is not None else None
            if c0 == 0 and c1 == d_out:
                torch.addmm(b, rows_in[r0:r1], w.t(), out=rows_out[r0:r1]) if b is not None else \
                    torch.mm(rows_in[r0:r1], w.t(), out=rows_out[r0:r1])
            else:
                rows_out[r0:r1, c0:c1] = torch.nn.functional.linear(rows_in[r0:r1], w, b)
            work.advance(2 * (r1 - r0) * d_in * (c1 - c0))
    return out


LEARNED_POSITION_STD = 0.02  # GPT-2's initialisation of its position table


def add_positions(x: torch.Tensor, cfg, seed_salt: int = 0) -> torch.Tensor:
    """X [nb, L, D] with positions 0..L−1 added: the sinusoidal table, or for "learned"
    a seeded random table standing in for a trained one (``seed_salt`` keeps the
    key-side table of cross-attention its own). "none" and RoPE return X unchanged."""
    kind = cfg.positions_spec.kind
    if cfg.weights_spec.trained:
        return x  # a trained layer's input is the model's own, positions already in it
    if kind == "sinusoidal":
        return add_sinusoidal(x)
    if kind == "learned":
        L, D = x.shape[-2], x.shape[-1]
        g = torch.Generator()
        g.manual_seed(zlib.crc32(repr((cfg.seed, "learned positions", seed_salt)).encode()))
        table = torch.randn(L, D, generator=g) * LEARNED_POSITION_STD  # [L, D]
        return x + table.to(x.device, x.dtype)
    return x


def position_table(x_before: torch.Tensor, x_after: torch.Tensor) -> torch.Tensor:
    """PE [L, D]: what add_positions added (the same for every batch element)."""
    return x_after[0] - x_before[0]


def rotate_qk(q: torch.Tensor, k: torch.Tensor, cfg) -> tuple[torch.Tensor, torch.Tensor]:
    """Q [nb, H, T, d_k] and K [nb, Hkv, S, d_k] after the transpose, turned by position
    (RoPE, rotate-half): query i at i + the mask's offset, key j at j. Other kinds
    return them unchanged."""
    if not cfg.positions_spec.rotates_qk:
        return q, k
    T, S = q.shape[2], k.shape[2]
    q_pos, k_pos = query_key_positions(T, S, cfg.mask_spec.offset(T, S))
    base = cfg.positions_spec.rope_base
    return apply_rope(q, q_pos, base), apply_rope(k, k_pos, base)  # new tensors, same shapes


def block_mask(spec: MaskSpec, r0: int, r1: int, T: int, S: int, device: str) -> tuple[
        torch.Tensor | None, np.ndarray]:
    """(hidden [r, S] bool on the device or None, rows of the block that see no key [r])."""
    visible = spec.visible(r0, r1, T, S)  # [r, S] numpy, only these rows
    if visible is None:
        return None, np.zeros(r1 - r0, dtype=bool)
    blind = ~visible.any(axis=1)  # [r]
    np.logical_not(visible, out=visible)  # now True = hidden, without a second [r, S] array
    return upload(visible, device), blind


def upload(mask: np.ndarray, device: str | torch.device) -> torch.Tensor:
    """A numpy mask on ``device``; to a GPU through pinned memory without waiting, so the
    host goes on queueing work while it crosses."""
    t = torch.from_numpy(mask)
    if torch.device(device).type != "cuda":
        return t
    return t.pin_memory().to(device, non_blocking=True)


def attend_rows(q_rows: torch.Tensor, k_c: torch.Tensor, v_c: torch.Tensor, hidden: torch.Tensor | None,
                blind: np.ndarray, scale: float, tick: Callable[[str], None],
                buffers: tuple[torch.Tensor, torch.Tensor] | None = None,
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Scores, weights and context for one block of query rows.

    q_rows [nb, H, r, d_k] (any strides); k_c, v_c [nb, Hkv, S, d_k], contiguous when nb > 1.
    GQA/MQA without repeating K and V: the g query heads sharing a kv head are
    stacked along the rows, so one batched matmul per kv head serves them all.
    ``buffers``: flat storage for scores and weights reused block after block, so
    a long run does not map and fault fresh pages for every block.
    """
    nb, H, r, dk = q_rows.shape
    Hkv, S = k_c.shape[1], k_c.shape[2]
    g = H // Hkv
    if nb == 1:
        q_c = q_rows  # one element: heads and rows already form a batch of matrices, no copy
    else:
        q_c = torch.empty(nb, H, r, dk, device=q_rows.device, dtype=q_rows.dtype)  # [nb, H, r, d_k]
        q_c.copy_(q_rows)  # the rows in flight, laid out for the batched matmul
    stacked = q_c.reshape(nb * Hkv, g * r, dk)  # [nb·Hkv, g·r, d_k]
    keys = k_c.reshape(nb * Hkv, S, dk).transpose(1, 2)  # [nb·Hkv, d_k, S], a view
    cells = nb * H * r * S
    if buffers is None:
        scores = torch.empty(nb * Hkv, g * r, S, device=q_rows.device, dtype=q_rows.dtype)  # [nb·Hkv, g·r, S]
    else:
        scores = buffers[0][:cells].view(nb * Hkv, g * r, S)  # [nb·Hkv, g·r, S]
    # scaled inside the product (alpha), as written: Q·Kᵀ / √d_k
    scores.baddbmm_(stacked, keys, beta=0.0, alpha=scale)
    scores = scores.view(nb, H, r, S)  # [nb, H, r, S]
    del q_c, stacked
    if hidden is not None:
        scores.masked_fill_(hidden, float("-inf"))
    tick(StageId.scores)
    if buffers is None:
        weights = torch.softmax(scores, dim=-1)  # [nb, H, r, S]
    else:
        weights = buffers[1][:cells].view(nb, H, r, S)  # [nb, H, r, S]
        torch.ops.aten._softmax.out(scores, -1, False, out=weights)
    if blind.any():  # softmax of nothing is NaN: those rows are shown as 0
        weights.masked_fill_(upload(blind[:, None], weights.device), 0.0)  # [r, 1] over [nb, H, r, S]
    tick(StageId.softmax)
    values = v_c.reshape(nb * Hkv, S, dk)  # [nb·Hkv, S, d_k], a view
    context = torch.bmm(weights.view(nb * Hkv, g * r, S), values).view(nb, H, r, dk)  # [nb, H, r, d_k]
    tick(StageId.weighted_sum)
    return scores, weights, context


@dataclass(frozen=True)
class LayerJob:
    """One layer to compute, as the engine hands it to a family's compute module."""

    cfg: Any  # MHAConfig
    source: Any  # the weight source: the layer's input (and, for trained weights, its weights)
    weights: Callable[[], dict[str, torch.Tensor]]  # the layer's weights, from the engine's cache
    device: str
    dtype: torch.dtype
    layout: Any  # engine.layout.Layout: which batch elements and rows go together, what is kept
    work: Work
    clock: Clock
    copies: HostCopies  # what crosses to the host: ``keep`` each tensor the trace keeps


@dataclass(frozen=True)
class LayerResult:
    """What a family's compute module hands back: every stage's kept tensors as float32 numpy."""

    stored: dict[str, dict[str, np.ndarray | HeldArray]]  # by stage id, then tensor name
    weights: dict[str, torch.Tensor]
    blind_rows: np.ndarray  # bool [T]: query rows that see no key
    norms: torch.Tensor | tuple[float, ...]  # ||Y[b]|| for every batch element
    notes: tuple[str, ...]


