"""Grouped-query attention (MHA, GQA, MQA) in torch: one engine run's batch elements, stages
and row blocks, keeping what the views show.

Each stage's tensors are kept through the run's HostCopies (core/kernels/host.py): float32
numpy shared with torch on the CPU, held on the device elsewhere; view and transpose are views
of the projections' kept arrays, as they are views in torch.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from mha_explorer.core.errors import check_cancel
from mha_explorer.core.kernels.decoding import (
    DecodeRun,
    LayerTensors,
    StepResult,
    attend_cache,
    kept_after,
    step_rows,
    visible_rows,
)
from mha_explorer.core.kernels.positions import apply_rope, rms_norm
from mha_explorer.core.kernels.steps import (
    LayerJob,
    LayerResult,
    add_positions,
    attend_rows,
    block_mask,
    linear,
    position_table,
    rotate_qk,
    upload,
)
from mha_explorer.core.specs.mask_counts import mask_notes
from mha_explorer.core.stages.catalog import StageId
from mha_explorer.core.stages.held import HeldArray
from mha_explorer.core.variants.grouped.shapes import grouped_stages
from mha_explorer.core.variants.positions import position_notes


def picked_note(picked: tuple[int, ...], T: int, batch: int) -> str:
    """Which rows a picture of picked rows shows, in words: the first few and the last."""
    shown = ", ".join(f"{r:,}" for r in picked[:4]) + (f", …, {picked[-1]:,}" if len(picked) > 4 else "")
    return (f"showing batch element {batch} and {len(picked):,} of {T:,} query rows ({shown}), spread "
            "evenly and each computed exactly; statistics are over these rows; the stages after the "
            "softmax were not computed")


def run_layer(job: LayerJob) -> LayerResult:
    """Every stage of the job's layer, batch element group by group."""
    run = GroupedRun(job)
    for batch in job.layout.batches:
        run.run_batch(batch)
    run.keep_windows()
    norms = torch.cat(run.norms) if run.norms else torch.empty(0)  # [B]; rows mode: no Y, none
    return LayerResult(run.stored, run.w, run.blind_rows, norms, run.notes())


class GroupedRun:
    """The tensors of one run as it goes, and what is kept of them."""

    def __init__(self, job: LayerJob):
        cfg = job.cfg
        self.cfg, self.source, self.device, self.dtype = cfg, job.source, job.device, job.dtype
        self.w, self.layout, self.work, self.clock = job.weights(), job.layout, job.work, job.clock
        self.keep = job.copies.keep
        layout = self.layout
        stage_ids = tuple(s.id for s in grouped_stages(cfg))
        self.stored: dict[str, dict[str, np.ndarray | HeldArray]] = {s: {} for s in stage_ids}
        self.norms: list[torch.Tensor] = []  # ||Y[b]|| of each batch group, on the device
        self.blind_rows = np.zeros(cfg.T, dtype=bool)  # rows that see no key
        # the shown rows may span several compute blocks; each block fills its slice, on the
        # device (kept once the run is done)
        self.windows: dict[str, torch.Tensor] = {}
        if not layout.full:
            n = len(layout.picked) if layout.picked else layout.rows[1] - layout.rows[0]
            shown = (1, cfg.H, n, cfg.S)
            self.windows = {name: torch.empty(shown, device=self.device, dtype=self.dtype)
                            for name in ("scores", "weights")}  # [1, H, n, S]

    def keep_windows(self) -> None:
        if self.windows:
            self.stored[StageId.scores]["scores"] = self.keep(self.windows["scores"])
            self.stored[StageId.softmax]["weights"] = self.keep(self.windows["weights"])

    def notes(self) -> tuple[str, ...]:
        notes = list(mask_notes(self.cfg)) + list(position_notes(self.cfg))
        if self.layout.picked:
            notes.append(picked_note(self.layout.picked, self.cfg.T, self.layout.show_batch))
        elif not self.layout.full:
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
        nb, T, S, H, Hkv, dk, qD = len(batch), cfg.T, cfg.S, cfg.H, cfg.Hkv, cfg.d_k, cfg.q_dim
        self.work.check()
        x_in, xkv_in = self.source.inputs(cfg, batch, self.device, self.dtype)  # [nb, T, D], [nb, S, D]
        self.clock.tick(StageId.input)
        x = add_positions(x_in, cfg)
        xkv = add_positions(xkv_in, cfg, seed_salt=1) if cfg.is_cross else x
        if cfg.positions_spec.added_to_input:
            self.clock.tick(StageId.positions)
        x_pos, xkv_pos = x, xkv  # what the positions stage shows
        if cfg.normed_input:  # RMSNorm of the layer's input before the projections
            x = rms_norm(x, w["norm"], cfg.norm_eps)  # [nb, T, D]
            xkv = rms_norm(xkv, w["norm"], cfg.norm_eps) if cfg.is_cross else x  # [nb, S, D]
            self.clock.tick(StageId.norm)
        q = linear(x, w["W_Q"], w.get("b_Q") if bias else None, self.work)  # [nb, T, H*d_k]
        k = linear(xkv, w["W_K"], w.get("b_K") if bias else None, self.work)  # [nb, S, Hkv*d_k]
        v = linear(xkv, w["W_V"], w.get("b_V") if bias else None, self.work)  # [nb, S, Hkv*d_k]
        self.clock.tick(StageId.project)
        qh = q.view(nb, T, H, dk)  # [nb, T, H, d_k]
        kh = k.view(nb, S, Hkv, dk)  # [nb, S, Hkv, d_k]
        vh = v.view(nb, S, Hkv, dk)  # [nb, S, Hkv, d_k]
        self.clock.tick(StageId.view)
        q_t, k_t = qh.transpose(1, 2), kh.transpose(1, 2)  # [nb, H, T, d_k], [nb, Hkv, S, d_k]
        vt = vh.transpose(1, 2)  # [nb, Hkv, S, d_k]
        self.clock.tick(StageId.transpose)
        q_n, k_n = q_t, k_t
        if cfg.norms:  # each head's q and k normalised over its d_k numbers
            q_n, k_n = rms_norm(q_t, w["q_norm"], cfg.norm_eps), rms_norm(k_t, w["k_norm"], cfg.norm_eps)
            self.clock.tick(StageId.qk_norm)
        qt, kt = rotate_qk(q_n, k_n, cfg)  # RoPE: new [nb, H, T, d_k], [nb, Hkv, S, d_k]; else the same
        if cfg.positions_spec.rotates_qk:
            self.clock.tick(StageId.rope)
        if self.layout.picked:  # only the rows drawn, and no stage after the softmax
            self._attention_picked(qt, kt, vt)
            self._keep_inputs(x_in, xkv_in, q, k, v)
            self._keep_positions(x_in, x_pos, xkv_in, xkv_pos, qt, kt)
            self._keep_norms(x, xkv, q_n, k_n)
            return
        ctx = self._attention(batch, qt, kt, vt)  # [nb, H, T, d_k]
        self.work.check()
        back = ctx.transpose(1, 2)  # [nb, T, H, d_k], not contiguous
        merged = back.contiguous().view(nb, T, qD)  # [nb, T, H·d_k]: the first real copy
        self.clock.tick(StageId.merge)
        y = linear(merged, w["W_O"], w.get("b_O") if bias else None, self.work)  # [nb, T, D]
        self.clock.tick(StageId.output)
        self.norms.append(torch.linalg.vector_norm(y.float().view(nb, -1), dim=1))  # [nb]
        if self.layout.keeps(batch):
            self._keep_inputs(x_in, xkv_in, q, k, v)
            self._keep_after(ctx, merged, y)
            self._keep_positions(x_in, x_pos, xkv_in, xkv_pos, qt, kt)
            self._keep_norms(x, xkv, q_n, k_n)

    def _keep_norms(self, x, xkv, q_n, k_n) -> None:
        keep = self.keep
        if self.cfg.normed_input:
            self.stored[StageId.norm] = {"X": keep(x)} | ({"X_kv": keep(xkv)} if self.cfg.is_cross else {})
        if self.cfg.norms:
            self.stored[StageId.qk_norm] = {"Q": keep(q_n), "K": keep(k_n)}

    def _attention_picked(self, qt, kt, vt) -> None:
        """Scores and softmax of the picked query rows only, a few rows at a time; each row
        exactly as the whole computation makes it (its own mask row, every key)."""
        cfg, layout = self.cfg, self.layout
        _nb, H, T, dk = qt.shape  # one batch element
        S = kt.shape[2]
        picked = layout.picked
        spec, scale = cfg.mask_spec, 1.0 / math.sqrt(dk)
        step = layout.picked_step
        for i0 in range(0, len(picked), step):
            self.work.check()
            rows = picked[i0:i0 + step]
            index = upload(np.asarray(rows, dtype=np.int64), qt.device)  # [r], without a device wait
            q_rows = qt.index_select(2, index)  # [1, H, r, d_k]: the picked rows only
            visible = [spec.visible(r, r + 1, T, S) for r in rows]  # each [1, S] or None
            if visible[0] is None:
                hidden, blind = None, np.zeros(len(rows), dtype=bool)
            else:
                seen = np.concatenate(visible)  # [r, S]
                blind = ~seen.any(axis=1)  # [r]
                hidden = upload(~seen, self.device)  # [r, S], True = hidden
            self.blind_rows[list(rows)] = blind
            scores, weights, _context = attend_rows(q_rows, kt, vt, hidden, blind, scale,
                                                    self.clock.tick)  # [1, H, r, S|d_k]
            window = slice(i0, i0 + len(rows))
            self.windows["scores"][:, :, window] = scores
            self.windows["weights"][:, :, window] = weights
            del scores, weights, _context, hidden
            self.work.advance(H * len(rows) * S * (4 * dk + 6))

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
                self.stored[StageId.scores]["scores"] = self.keep(scores)
                self.stored[StageId.softmax]["weights"] = self.keep(weights)
            elif keep and layout.rows[0] <= r0 and r1 <= layout.rows[1]:
                window = slice(r0 - layout.rows[0], r1 - layout.rows[0])
                self.windows["scores"][:, :, window] = scores
                self.windows["weights"][:, :, window] = weights
            del scores, weights, context, hidden  # before the next block's are made
            self.work.advance(nb * H * (r1 - r0) * S * (4 * dk + 6))
        return ctx

    def _keep_positions(self, x_in, x, xkv_in, xkv, qt, kt) -> None:
        """The positions step's tensors: PE and X + PE, or Q and K after RoPE."""
        cfg, s, keep = self.cfg, self.stored, self.keep
        if cfg.positions_spec.added_to_input:
            s[StageId.positions] = {"PE": keep(position_table(x_in, x)), "X": keep(x)}
            if cfg.is_cross:
                s[StageId.positions]["X_kv"] = keep(xkv)
        if cfg.positions_spec.rotates_qk:
            s[StageId.rope] = {"Q": keep(qt), "K": keep(kt)}

    def _keep_inputs(self, x, xkv, q, k, v) -> None:
        """What the views show; view and transpose are views of the projections' kept arrays,
        as they are views in torch."""
        cfg, s, keep = self.cfg, self.stored, self.keep
        nb, T, S, H, Hkv, dk = x.shape[0], cfg.T, cfg.S, cfg.H, cfg.Hkv, cfg.d_k
        s[StageId.input]["X"] = keep(x)
        if cfg.is_cross:
            s[StageId.input]["X_kv"] = keep(xkv)
        hq, hk, hv = keep(q), keep(k), keep(v)
        s[StageId.project] = {"Q": hq, "K": hk, "V": hv}
        views = {"Q": hq.reshape(nb, T, H, dk), "K": hk.reshape(nb, S, Hkv, dk),  # [nb, T|S, H|Hkv, d_k]
                 "V": hv.reshape(nb, S, Hkv, dk)}
        s[StageId.view] = views
        s[StageId.transpose] = {n: a.transpose(0, 2, 1, 3) for n, a in views.items()}  # [nb, H|Hkv, T|S, d_k]

    def _keep_after(self, ctx, merged, y) -> None:
        """The context, the merged heads and the output."""
        s, keep = self.stored, self.keep
        hctx = keep(ctx)
        s[StageId.weighted_sum]["context"] = hctx
        s[StageId.merge] = {"context": hctx.transpose(0, 2, 1, 3), "merged": keep(merged)}  # [nb, T, H, d_k]
        s[StageId.output]["Y"] = keep(y)


# Decoding, tiles and the full pass they are checked against --------------------------------


def project_heads(cfg, w: dict[str, torch.Tensor], x: torch.Tensor, xkv: torch.Tensor):
    """Q [B, H, T, d_k] from x and K, V [B, Hkv, S, d_k] from xkv, through the input's and each
    head's RMSNorm when the config has them (RoPE is the caller's: it needs the positions)."""
    B, T, S, H, Hkv, dk = x.shape[0], x.shape[1], xkv.shape[1], cfg.H, cfg.Hkv, cfg.d_k
    if cfg.normed_input:
        eps = cfg.norm_eps
        x, xkv = rms_norm(x, w["norm"], eps), rms_norm(xkv, w["norm"], eps)  # [B, T, D], [B, S, D]
    q = F.linear(x, w["W_Q"], w.get("b_Q"))  # [B, T, H·d_k]
    k = F.linear(xkv, w["W_K"], w.get("b_K"))  # [B, S, Hkv·d_k]
    v = F.linear(xkv, w["W_V"], w.get("b_V"))  # [B, S, Hkv·d_k]
    qh = q.view(B, T, H, dk).transpose(1, 2)  # [B, H, T, d_k]
    kh = k.view(B, S, Hkv, dk).transpose(1, 2)  # [B, Hkv, S, d_k]
    vh = v.view(B, S, Hkv, dk).transpose(1, 2)  # [B, Hkv, S, d_k]
    if cfg.norms:
        qh, kh = rms_norm(qh, w["q_norm"], cfg.norm_eps), rms_norm(kh, w["k_norm"], cfg.norm_eps)
    return qh, kh, vh


def layer_tensors(cfg, source) -> LayerTensors:
    """The source's weights (nn.Linear layout) and input X [B, T, D], X_kv [B, S, D], float32 CPU."""
    w = source.weights(cfg, "cpu", torch.float32)
    x, xkv = source.inputs(cfg, range(cfg.batch), "cpu", torch.float32)  # [B, T, D], [B, S, D]
    return LayerTensors(w, x, xkv)


def attention_inputs(cfg, tensors: LayerTensors):
    """Q [B, H, T, d_k], K and V [B, Hkv, S, d_k] as the scores read them (RoPE applied)."""
    x = add_positions(tensors.x, cfg)
    xkv = add_positions(tensors.x_kv, cfg, seed_salt=1) if cfg.is_cross else x
    q, k, v = project_heads(cfg, tensors.weights, x, xkv)
    q, k = rotate_qk(q, k, cfg)  # RoPE by position, else unchanged
    return q, k, v


def full_pass(cfg, tensors: LayerTensors) -> np.ndarray:
    """One full pass of the layer with torch's SDPA and the config's mask: Y [B, T, D]."""
    B, T, qD, g = cfg.batch, cfg.T, cfg.q_dim, cfg.group_size
    visible = cfg.mask_spec.visible(0, T, T, cfg.S)
    with torch.no_grad():
        q, k, v = attention_inputs(cfg, tensors)  # [B, H, T, d_k], [B, Hkv, S, d_k] ×2
        ctx = F.scaled_dot_product_attention(
            q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
            attn_mask=None if visible is None else torch.from_numpy(visible))  # [B, H, T, d_k]
        y = F.linear(ctx.transpose(1, 2).reshape(B, T, qD), tensors.weights["W_O"],
                     tensors.weights.get("b_O"))  # [B, T, D]
    return y.numpy()


def decode(full, prompt: int, steps: int, show: int, tensors: LayerTensors, cancel=None,
           progress=None) -> DecodeRun:
    """The prompt pass and ``steps`` generation steps of the sequence ``full`` (its decode
    config), float32 on the CPU, with a K and V cache [B, Hkv, kept, d_k]."""
    w = tensors.weights
    x = add_positions(tensors.x, full)  # [B, L, D]: the engine's added positions, if any
    spec, length = full.mask_spec, full.T
    B, qD, Hkv, dk = full.batch, full.q_dim, full.Hkv, full.d_k
    scale = 1.0 / math.sqrt(dk)
    k_cache = torch.empty(B, Hkv, 0, dk)  # [B, Hkv, kept, d_k]
    v_cache = torch.empty(B, Hkv, 0, dk)
    cached = np.zeros(0, dtype=np.int64)  # the position of each cached token
    results = []
    with torch.no_grad():
        for t in range(steps + 1):
            check_cancel(cancel)  # one step is one token (the prompt pass: at most 512)
            if progress is not None:
                progress(t / (steps + 1))
            p0, p1 = step_rows(t, prompt)
            q, k_new, v_new = project_heads(full, w, x[:, p0:p1], x[:, p0:p1])
            if full.positions_spec.rotates_qk:  # each token turned once, by its place in the sequence
                pos, base = torch.arange(p0, p1), full.positions_spec.rope_base
                q, k_new = apply_rope(q, pos, base), apply_rope(k_new, pos, base)
            k_cache = torch.cat([k_cache, k_new], dim=2)  # [B, Hkv, kept + n, d_k]
            v_cache = torch.cat([v_cache, v_new], dim=2)
            cached = np.concatenate([cached, np.arange(p0, p1)])
            visible = visible_rows(spec, p0, p1, length, cached)  # [n, keys]
            scores, weights, context = attend_cache(q, k_cache, v_cache, visible, scale)
            merged = context.transpose(1, 2).reshape(B, p1 - p0, qD)  # [B, n, H·d_k]
            y = F.linear(merged, w["W_O"], w.get("b_O"))  # [B, n, D]
            keep = kept_after(spec, p1, cached)  # a sliding window forgets what no later row sees
            scored = tuple(int(p) for p in cached)
            k_cache, v_cache = k_cache[:, :, keep], v_cache[:, :, keep]  # [B, Hkv, kept, d_k]
            cached = cached[keep]
            results.append(StepResult(
                t, (p0, p1), tuple(int(p) for p in cached), y.numpy().copy(),
                scores[show].numpy().copy(), weights[show].numpy().copy(), scored))
    return DecodeRun(full, prompt, tuple(results), k_cache[show].numpy().copy(), v_cache[show].numpy().copy())
