"""One engine run's loop: batch elements, stages, row blocks, and what is kept.

``Layout`` decides which batch elements go together and which query rows are
computed at once; ``RunState`` runs them and keeps each stage's tensors as
float32 numpy for the views (shared with torch when already CPU float32).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.kernels.steps import (
    Clock,
    Work,
    add_positions,
    attend_rows,
    block_mask,
    linear,
    position_table,
    rotate_qk,
)
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.plan.memory import chunk_rows, shown_rows
from mha_explorer.core.specs.mask_counts import mask_notes
from mha_explorer.core.stages.ids import STAGE_IDS


@dataclass(frozen=True)
class Layout:
    full: bool
    batches: tuple[range, ...]
    row_blocks: tuple[tuple[int, int], ...]
    rows: tuple[int, int]  # query rows kept for display
    show_batch: int

    @classmethod
    def of(cls, cfg: MHAConfig, mode: str, show_batch: int, show_rows_from: int) -> Layout:
        B, T = cfg.batch, cfg.T
        show_batch = show_batch if 0 <= show_batch < B else 0
        if mode == "full":
            return cls(True, (range(B),), ((0, T),), (0, T), show_batch)
        shown = shown_rows(cfg)
        r0 = max(0, min(show_rows_from, T - shown))
        rows = (r0, r0 + shown)
        # block edges include the shown window's, so every block is wholly in or out of it
        edges = sorted({0, T, *rows, *range(0, T, chunk_rows(cfg))})
        blocks = tuple(zip(edges[:-1], edges[1:], strict=True))
        return cls(False, tuple(range(b, b + 1) for b in range(B)), blocks, rows, show_batch)

    def keeps(self, batch: range) -> bool:
        return self.full or batch.start == self.show_batch


def host(t: torch.Tensor) -> np.ndarray:
    """float32 numpy; shares memory when the tensor already is CPU float32."""
    return t.detach().to("cpu", torch.float32).numpy()


def position_notes(cfg: MHAConfig) -> tuple[str, ...]:
    kind = cfg.positions_spec.kind
    if kind in ("sinusoidal", "learned") and cfg.weights_spec.trained:
        return (f"{kind} positions: the trained layer's input already holds the model's own, "
                "so nothing is added",)
    if kind == "learned":
        return ("learned positions: with random weights a seeded random table (std 0.02) stands "
                "in for the trained one",)
    return ()


class RunState:
    """The tensors of one run as it goes, and what is kept of them."""

    def __init__(self, cfg: MHAConfig, source, device: str, dtype: torch.dtype,
                 weights: dict[str, torch.Tensor], layout: Layout, work: Work, clock: Clock):
        self.cfg, self.source, self.device, self.dtype = cfg, source, device, dtype
        self.w, self.layout, self.work, self.clock = weights, layout, work, clock
        # the plan's stages: the nine, with "positions" or "rope" where positions are computed
        stage_ids = (*STAGE_IDS, *build_plan(cfg).stage_ids)
        self.stored: dict[str, dict[str, np.ndarray]] = {s: {} for s in stage_ids}
        self.norms: list[float] = []
        self.blind_rows = np.zeros(cfg.T, dtype=bool)  # rows that see no key
        if not layout.full:
            # the shown rows may span several compute blocks; each block fills its slice
            shown = (1, cfg.H, layout.rows[1] - layout.rows[0], cfg.S)
            self.stored["scores"]["scores"] = np.empty(shown, np.float32)
            self.stored["softmax"]["weights"] = np.empty(shown, np.float32)

    def notes(self) -> tuple[str, ...]:
        notes = list(mask_notes(self.cfg)) + list(position_notes(self.cfg))
        if not self.layout.full:
            r0, r1 = self.layout.rows
            notes.append(f"showing batch element {self.layout.show_batch} and query rows {r0}–{r1 - 1} "
                         f"of {self.cfg.T:,}; the whole batch was computed")
        blind = int(self.blind_rows.sum())
        if blind:
            notes.append(f"{blind} query rows see no key under this mask; their weights are "
                         "shown as 0 instead of NaN (softmax of nothing is undefined)")
        return tuple(notes)

    def run_batch(self, batch: range) -> None:
        """Every stage for the batch elements in ``batch``."""
        cfg, w, bias = self.cfg, self.w, self.cfg.bias
        nb, T, S, H, Hkv, dk, D = len(batch), cfg.T, cfg.S, cfg.H, cfg.Hkv, cfg.d_k, cfg.d_model
        self.work.check()
        x_in, xkv_in = self.source.inputs(cfg, batch, self.device, self.dtype)  # [nb, T, D], [nb, S, D]
        self.clock.tick("input")
        x = add_positions(x_in, cfg)
        xkv = add_positions(xkv_in, cfg, seed_salt=1) if cfg.is_cross else x
        if cfg.positions_spec.added_to_input:
            self.clock.tick("positions")
        q = linear(x, w["W_Q"], w.get("b_Q") if bias else None, self.work)  # [nb, T, D]
        k = linear(xkv, w["W_K"], w.get("b_K") if bias else None, self.work)  # [nb, S, Hkv*d_k]
        v = linear(xkv, w["W_V"], w.get("b_V") if bias else None, self.work)  # [nb, S, Hkv*d_k]
        self.clock.tick("project")
        qh = q.view(nb, T, H, dk)  # [nb, T, H, d_k]
        kh = k.view(nb, S, Hkv, dk)  # [nb, S, Hkv, d_k]
        vh = v.view(nb, S, Hkv, dk)  # [nb, S, Hkv, d_k]
        self.clock.tick("view")
        q_t, k_t = qh.transpose(1, 2), kh.transpose(1, 2)  # [nb, H, T, d_k], [nb, Hkv, S, d_k]
        vt = vh.transpose(1, 2)  # [nb, Hkv, S, d_k]
        self.clock.tick("transpose")
        qt, kt = rotate_qk(q_t, k_t, cfg)  # RoPE: new [nb, H, T, d_k], [nb, Hkv, S, d_k]; else the same
        if cfg.positions_spec.rotates_qk:
            self.clock.tick("rope")
        ctx = self._attention(batch, qt, kt, vt)  # [nb, H, T, d_k]
        self.work.check()
        back = ctx.transpose(1, 2)  # [nb, T, H, d_k], not contiguous
        merged = back.contiguous().view(nb, T, D)  # [nb, T, D]: the first real copy
        self.clock.tick("merge")
        y = linear(merged, w["W_O"], w.get("b_O") if bias else None, self.work)  # [nb, T, D]
        self.clock.tick("output")
        self.norms.extend(float(torch.linalg.vector_norm(y[i].float())) for i in range(nb))
        if self.layout.keeps(batch):
            self._keep(x_in, xkv_in, q, k, v, ctx, merged, y)
            self._keep_positions(x_in, x, xkv_in, xkv, qt, kt)

    def _attention(self, batch: range, qt, kt, vt) -> torch.Tensor:
        """Scores, softmax and weighted sum, one block of query rows at a time."""
        cfg, layout = self.cfg, self.layout
        nb, H, T, dk = qt.shape
        S = kt.shape[2]
        spec, scale = cfg.mask_spec, 1.0 / math.sqrt(dk)
        # [nb, Hkv, S, d_k], read by every block; one element's heads need no copy to be batched
        k_c, v_c = (kt, vt) if nb == 1 else (kt.contiguous(), vt.contiguous())
        whole = layout.row_blocks == ((0, T),)  # one block: its context is the whole context
        ctx = None if whole else torch.empty(nb, H, T, dk, device=self.device, dtype=self.dtype)
        keep = layout.keeps(batch)
        most = nb * H * max(r1 - r0 for r0, r1 in layout.row_blocks) * S
        buffers = None if whole else tuple(
            torch.empty(most, device=self.device, dtype=self.dtype) for _ in range(2))  # [cells]
        for r0, r1 in layout.row_blocks:
            self.work.check()
            hidden, blind = block_mask(spec, r0, r1, T, S, self.device)
            self.blind_rows[r0:r1] = blind
            scores, weights, context = attend_rows(qt[:, :, r0:r1], k_c, v_c, hidden, blind, scale,
                                                   self.clock.tick, buffers)  # [nb, H, r, S|d_k]
            if whole:
                ctx = context  # [nb, H, T, d_k]
            else:
                ctx[:, :, r0:r1] = context
            if layout.full:
                self.stored["scores"]["scores"] = host(scores)
                self.stored["softmax"]["weights"] = host(weights)
            elif keep and layout.rows[0] <= r0 and r1 <= layout.rows[1]:
                window = slice(r0 - layout.rows[0], r1 - layout.rows[0])
                self.stored["scores"]["scores"][:, :, window] = host(scores)
                self.stored["softmax"]["weights"][:, :, window] = host(weights)
            del scores, weights, context, hidden  # before the next block's are made
            self.work.advance(nb * H * (r1 - r0) * S * (4 * dk + 6))
        return ctx

    def _keep_positions(self, x_in, x, xkv_in, xkv, qt, kt) -> None:
        """The positions step's tensors: PE and X + PE, or Q and K after RoPE."""
        cfg, s = self.cfg, self.stored
        if cfg.positions_spec.added_to_input:
            s["positions"] = {"PE": host(position_table(x_in, x)), "X": host(x)}
            if cfg.is_cross:
                s["positions"]["X_kv"] = host(xkv)
        if cfg.positions_spec.rotates_qk:
            s["rope"] = {"Q": host(qt), "K": host(kt)}

    def _keep(self, x, xkv, q, k, v, ctx, merged, y) -> None:
        """Host copies of what the views show; view and transpose are numpy views
        of the projections' copies, as they are views in torch."""
        cfg, s = self.cfg, self.stored
        nb, T, S, H, Hkv, dk = x.shape[0], cfg.T, cfg.S, cfg.H, cfg.Hkv, cfg.d_k
        s["input"]["X"] = host(x)
        if cfg.is_cross:
            s["input"]["X_kv"] = host(xkv)
        hq, hk, hv = host(q), host(k), host(v)
        s["project"] = {"Q": hq, "K": hk, "V": hv}
        views = {"Q": hq.reshape(nb, T, H, dk), "K": hk.reshape(nb, S, Hkv, dk),  # [nb, T|S, H|Hkv, d_k]
                 "V": hv.reshape(nb, S, Hkv, dk)}
        s["view"] = views
        s["transpose"] = {n: a.transpose(0, 2, 1, 3) for n, a in views.items()}  # [nb, H|Hkv, T|S, d_k]
        hctx = host(ctx)
        s["weighted_sum"]["context"] = hctx
        s["merge"] = {"context": hctx.transpose(0, 2, 1, 3), "merged": host(merged)}  # [nb, T, H, d_k]
        s["output"]["Y"] = host(y)
