"""The torch engine: runs the nine stages for a config and returns a Trace.

The only module of the core that imports torch. Everything it hands back is
numpy (float32) or plain Python, so the views never touch torch.
"""

from __future__ import annotations

import math
import time
import zlib
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.memory import Estimate, MemoryBudgetError, default_budget, estimate
from mha_explorer.core.plan import STAGE_IDS, causal_note, causal_offset
from mha_explorer.core.trace import Cancelled, Trace

TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
WEIGHT_STD = 1.0  # times 1/sqrt(D): scores of order 1, so the maps show structure
BIAS_STD = 0.1


def resolve_device(name: str) -> str:
    """'auto' picks CUDA, then MPS, then CPU; an unavailable request falls back to the
    CPU (``run`` then says so in the trace's notes, see ``fallback_note``)."""
    if name in ("auto", "cuda") and torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if name in ("auto", "mps") and mps is not None and mps.is_available():
        return "mps"
    return "cpu"


DEVICE_NAMES = {"cuda": "CUDA", "mps": "MPS (Apple GPU)"}


def fallback_note(requested: str, device: str) -> str | None:
    """A note when the config named a GPU that this machine does not have."""
    if requested in DEVICE_NAMES and device != requested:
        return f"{DEVICE_NAMES[requested]} is not available here; computed on the CPU"
    return None


def device_budget(device: str) -> int:
    if device == "cuda":
        free, _total = torch.cuda.mem_get_info()
        return default_budget(available=free)
    return default_budget()


def _generator(seed: int, *salt: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(zlib.crc32(repr((seed,) + salt).encode()))
    return g


def make_weights(cfg: MHAConfig) -> dict[str, torch.Tensor]:
    """Deterministic float32 weights on the CPU in nn.Linear layout (out × in)."""
    D, kvD = cfg.d_model, cfg.kv_dim
    shapes = {"W_Q": (D, D), "W_K": (kvD, D), "W_V": (kvD, D), "W_O": (D, D)}
    out: dict[str, torch.Tensor] = {}
    for i, (name, shape) in enumerate(shapes.items()):
        out[name] = torch.randn(shape, generator=_generator(cfg.seed, 1, i)) * (WEIGHT_STD / math.sqrt(D))
        if cfg.bias:
            out["b" + name[1:]] = torch.randn(shape[0], generator=_generator(cfg.seed, 2, i)) * BIAS_STD
    return out


def token_labels(cfg: MHAConfig) -> tuple[tuple[str, ...], tuple[str, ...]]:
    q = cfg.tokens if cfg.tokens is not None else tuple(f"t{i}" for i in range(cfg.T))
    kv = q if not cfg.is_cross else tuple(f"s{j}" for j in range(cfg.S))
    return q, kv


def make_inputs(cfg: MHAConfig, b: int) -> tuple[torch.Tensor, torch.Tensor]:
    """X[b] [T, D] and X_kv[b] [S, D] in float32: the same word, the same vector."""
    D = cfg.d_model
    if cfg.tokens is not None:
        x = torch.stack([torch.randn(D, generator=_generator(cfg.seed, 3, zlib.crc32(w.encode())))
                         for w in cfg.tokens])
    else:
        x = torch.randn(cfg.T, D, generator=_generator(cfg.seed, 4, b))
    xkv = torch.randn(cfg.S, D, generator=_generator(cfg.seed, 5, b)) if cfg.is_cross else x
    return x, xkv


def visible_keys(cfg: MHAConfig, rows: slice | None = None) -> torch.Tensor | None:
    """Bool [T, S]: True where query i may look at key j; None when nothing is masked."""
    if not cfg.causal:
        return None
    T, S = cfg.T, cfg.S
    allowed = torch.ones(T, S, dtype=torch.bool).tril(diagonal=causal_offset(cfg))
    return allowed if rows is None else allowed[rows]


class _Clock:
    """Per-stage wall time that waits for the device to finish."""

    def __init__(self, device: str):
        self.device = device
        self.totals = {s: 0.0 for s in STAGE_IDS}
        self._t = time.perf_counter()

    def tick(self, stage: str) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()
        now = time.perf_counter()
        self.totals[stage] += now - self._t
        self._t = now


def _host(t: torch.Tensor) -> np.ndarray:
    """float32 numpy; shares memory when the tensor already is CPU float32."""
    return t.detach().to("cpu", torch.float32).numpy()


def run(
    cfg: MHAConfig,
    *,
    budget_bytes: int | None = None,
    show_batch: int = 0,
    show_rows_from: int = 0,
    mode: str | None = None,
    cancel: Callable[[], bool] | None = None,
    progress: Callable[[float], None] | None = None,
) -> Trace:
    """Compute every stage of the config on its device.

    ``mode`` forces "full" or "windowed"; None picks full when it fits. Raises
    MemoryBudgetError before allocating when the chosen mode's estimate exceeds the
    budget, and Cancelled when ``cancel()`` turns true between blocks. A CUDA
    out-of-memory error, or a GPU asked for that this machine lacks, falls back to
    the CPU with a note in ``Trace.notes``.
    """
    device = resolve_device(cfg.device)
    unavailable = fallback_note(cfg.device, device)  # asked for a GPU that is not here
    notes = (unavailable,) if unavailable else ()
    try:
        return _run_on(cfg, device, budget_bytes, show_batch, show_rows_from, mode, cancel, progress, notes)
    except torch.cuda.OutOfMemoryError:
        if device != "cuda":
            raise
        torch.cuda.empty_cache()
        note = ("the GPU ran out of memory, so this run was computed on the CPU",)
        return _run_on(cfg, "cpu", budget_bytes, show_batch, show_rows_from, mode, cancel, progress, note)


def _run_on(cfg, device, budget_bytes, show_batch, show_rows_from, mode, cancel, progress, notes) -> Trace:
    if mode not in (None, "full", "windowed"):
        raise ValueError(f"mode must be 'full', 'windowed' or None, got {mode!r}")
    est: Estimate = estimate(cfg, host_copy=cfg.dtype != "float32" or device != "cpu")
    budget = device_budget(device) if budget_bytes is None else budget_bytes
    where = "the GPU" if device == "cuda" else "the CPU" if device == "cpu" else device
    if mode is None:
        chosen, peak = est.choose(budget, where)
    else:
        # a forced mode is still held to the budget: the guard is the point
        chosen, peak = mode, est.full_bytes if mode == "full" else est.windowed_bytes
        if peak > budget or (mode == "full" and not est.full_allowed):
            raise MemoryBudgetError(peak, budget, where)
    B, T, S, H, Hkv, dk, D = cfg.batch, cfg.T, cfg.S, cfg.H, cfg.Hkv, cfg.d_k, cfg.d_model
    if not 0 <= show_batch < B:
        show_batch = 0
    notes = list(notes)
    if cfg.causal:
        notes.append(causal_note(cfg))

    full = chosen == "full"
    batches = [range(B)] if full else [range(b, b + 1) for b in range(B)]
    if full:
        row_blocks, rows = [(0, T)], (0, T)
    else:
        r0 = max(0, min(show_rows_from, T - est.shown_rows))
        rows = (r0, r0 + est.shown_rows)
        # block edges include the shown window's, so every block is wholly in or out of it
        edges = sorted({0, T, *rows, *range(0, T, est.chunk_rows)})
        row_blocks = list(zip(edges[:-1], edges[1:]))
        notes.append(f"showing batch element {show_batch} and query rows {rows[0]}–{rows[1] - 1} "
                     f"of {T:,}; the whole batch was computed")

    dtype = TORCH_DTYPES[cfg.dtype]
    w = {k: v.to(device, dtype) for k, v in make_weights(cfg).items()}
    bias = cfg.bias
    scale = 1.0 / math.sqrt(dk)
    allowed_all = visible_keys(cfg)
    masked = (~allowed_all.any(-1)) if allowed_all is not None else torch.zeros(T, dtype=torch.bool)
    if masked.any():
        notes.append(f"{int(masked.sum())} query rows see no key under this mask; their weights are "
                     "shown as 0 instead of NaN (softmax of nothing is undefined)")
    allowed_dev = allowed_all.to(device) if allowed_all is not None else None
    keep_row = (~masked).to(device)

    clock = _Clock(device)
    stored: dict[str, dict[str, np.ndarray]] = {s: {} for s in STAGE_IDS}
    if not full:
        # the shown rows may span several compute blocks; each block fills its slice
        shown = (1, H, rows[1] - rows[0], S)
        stored["scores"]["scores"] = np.empty(shown, np.float32)
        stored["softmax"]["weights"] = np.empty(shown, np.float32)
    outputs: list[np.ndarray] = []
    norms: list[float] = []
    done, total_work = 0, B * T
    start = time.perf_counter()

    for bs in batches:
        if cancel is not None and cancel():  # also before each batch element's projections
            raise Cancelled()
        keep = full or bs.start == show_batch
        pairs = [make_inputs(cfg, b) for b in bs]
        x = torch.stack([p[0] for p in pairs]).to(device, dtype)  # [nb, T, D]
        xkv = torch.stack([p[1] for p in pairs]).to(device, dtype) if cfg.is_cross else x  # [nb, S, D]
        nb = x.shape[0]
        clock.tick("input")

        q = F.linear(x, w["W_Q"], w.get("b_Q") if bias else None)  # [nb, T, D]
        k = F.linear(xkv, w["W_K"], w.get("b_K") if bias else None)  # [nb, S, Hkv*d_k]
        v = F.linear(xkv, w["W_V"], w.get("b_V") if bias else None)  # [nb, S, Hkv*d_k]
        clock.tick("project")
        qh = q.view(nb, T, H, dk)  # [nb, T, H, d_k]
        kh = k.view(nb, S, Hkv, dk)  # [nb, S, Hkv, d_k]
        vh = v.view(nb, S, Hkv, dk)  # [nb, S, Hkv, d_k]
        clock.tick("view")
        qt, kt, vt = qh.transpose(1, 2), kh.transpose(1, 2), vh.transpose(1, 2)  # [nb, H|Hkv, T|S, d_k]
        clock.tick("transpose")
        # GQA/MQA: query head i reads kv head i // (H / Hkv)
        k_rep = kt.repeat_interleave(H // Hkv, dim=1) if Hkv != H else kt  # [nb, H, S, d_k]
        v_rep = vt.repeat_interleave(H // Hkv, dim=1) if Hkv != H else vt  # [nb, H, S, d_k]

        ctx = torch.empty(nb, H, T, dk, device=device, dtype=dtype)  # [nb, H, T, d_k]
        for r0, r1 in row_blocks:
            if cancel is not None and cancel():
                raise Cancelled()
            scores = (qt[:, :, r0:r1] @ k_rep.transpose(-2, -1)) * scale  # [nb, H, r, S]
            if allowed_dev is not None:
                scores = scores.masked_fill(~allowed_dev[r0:r1], float("-inf"))
            clock.tick("scores")
            weights = torch.softmax(scores, dim=-1)  # [nb, H, r, S]
            if masked.any():
                weights = weights * keep_row[r0:r1, None]  # NaN rows -> 0
                weights = torch.nan_to_num(weights, nan=0.0)
            clock.tick("softmax")
            ctx[:, :, r0:r1] = weights @ v_rep  # [nb, H, r, d_k]
            clock.tick("weighted_sum")
            if full:
                stored["scores"]["scores"] = _host(scores)
                stored["softmax"]["weights"] = _host(weights)
            elif keep and rows[0] <= r0 and r1 <= rows[1]:  # block edges include the window's
                window = slice(r0 - rows[0], r1 - rows[0])
                stored["scores"]["scores"][:, :, window] = _host(scores)
                stored["softmax"]["weights"][:, :, window] = _host(weights)
            done += nb * (r1 - r0)
            if progress is not None:
                progress(done / total_work)

        back = ctx.transpose(1, 2)  # [nb, T, H, d_k], not contiguous
        merged = back.contiguous().view(nb, T, D)  # [nb, T, D]: the first real copy
        clock.tick("merge")
        y = F.linear(merged, w["W_O"], w.get("b_O") if bias else None)  # [nb, T, D]
        clock.tick("output")
        norms.extend(float(n) for n in torch.linalg.vector_norm(y.float(), dim=(1, 2)))

        if keep:
            stored["input"]["X"] = _host(x)
            if cfg.is_cross:
                stored["input"]["X_kv"] = _host(xkv)
            stored["project"] = {"Q": _host(q), "K": _host(k), "V": _host(v)}
            stored["view"] = {"Q": _host(qh), "K": _host(kh), "V": _host(vh)}
            stored["transpose"] = {"Q": _host(qt), "K": _host(kt), "V": _host(vt)}
            stored["weighted_sum"]["context"] = _host(ctx)
            stored["merge"] = {"context": _host(back), "merged": _host(merged)}
            stored["output"]["Y"] = _host(y)
            outputs.append(stored["output"]["Y"])

    seconds = time.perf_counter() - start
    return Trace(
        config=cfg, mode=chosen, device=device,
        tokens_q=token_labels(cfg)[0], tokens_kv=token_labels(cfg)[1],
        tensors=stored, weights={k: _host(v) for k, v in w.items()},
        output=outputs[0], timings=dict(clock.totals), seconds=seconds,
        batch_index=None if full else show_batch, rows=rows, masked_rows=masked.numpy(),
        estimate_bytes=peak, budget_bytes=budget, notes=tuple(notes), output_norms=tuple(norms),
    )
