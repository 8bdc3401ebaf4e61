"""The torch engine: runs a layer's stages for a request and returns a Trace.

With its helpers (weights.py, the kernels) the only part of the core that imports torch.
Everything it hands back reads as float32 numpy or is plain Python, so the views never
touch torch: CPU float32 tensors as numpy sharing their memory, others held where they were
computed and copied to the host a piece at a time (core/kernels/host.py). On a GPU nothing
waits for the device until the run's end: stages are timed with events, and the one wait is
for the device's work (the copies to the host go on behind it, on a stream of their own).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import platform
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import torch

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.engine import weights as weight_sources
from mha_explorer.core.engine.layout import Layout
from mha_explorer.core.errors import Cancelled
from mha_explorer.core.kernels.host import HostCopies, copy_to_host, to_numpy
from mha_explorer.core.kernels.steps import Clock, LayerJob, Work
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.plan.memory import (
    FULL_DETAIL_MAX_CELLS,
    Estimate,
    MemoryBudgetError,
    default_budget,
    estimate,
)
from mha_explorer.core.stages.catalog import StageId
from mha_explorer.core.stages.trace import Trace
from mha_explorer.core.variants.registry import family_of

__all__ = ["EngineRequest", "run", "Cancelled", "Trace", "resolve_device", "DisplayCapError",
           "WholeOnlyError"]

TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
MODES = (None, "full", "windowed", "rows")
DEVICE_NAMES = {"cuda": "CUDA", "mps": "MPS (Apple GPU)"}


MMAP_THRESHOLD = 256 << 10  # blocks from this size up go straight back to the OS when freed


def _return_freed_blocks_to_the_os() -> None:
    """Fix glibc's mmap threshold, which otherwise rises to the largest block freed:
    row blocks freed and made again would then come from a heap that only grows, and
    the process would hold far more than the memory guard's estimate."""
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return
    with contextlib.suppress(OSError, AttributeError):  # an unusual libc: looser estimates
        ctypes.CDLL("libc.so.6").mallopt(-3, MMAP_THRESHOLD)  # -3: M_MMAP_THRESHOLD


_return_freed_blocks_to_the_os()


@dataclass(frozen=True)
class EngineRequest:
    """What to compute: the config, how (``mode`` "full", "windowed" or None for
    full when it fits; "rows" for only the query rows a picture of one batch element
    shows, up to the softmax), what to keep for display, and the memory budget (None:
    the default for the device)."""

    config: MHAConfig
    mode: str | None = None
    show_batch: int = 0
    show_rows_from: int = 0
    budget_bytes: int | None = None


class DisplayCapError(ConfigError):
    """Full mode was forced for more attention cells than any display can show."""

    def __init__(self, cells: int):
        super().__init__(
            "mode", f"full mode keeps all {cells:,} attention cells, above the display cap of "
            f"{FULL_DETAIL_MAX_CELLS:,}; use windowed mode for this size")
        self.cells = cells


class WholeOnlyError(ConfigError):
    """A family that is computed whole (full mode): no row blocks for it yet."""

    def __init__(self, family: str, cells: int):
        super().__init__(
            "mode", f"{family} is computed whole (full mode only), up to "
            f"{FULL_DETAIL_MAX_CELLS:,} attention cells; this layer has {cells:,}: lower the batch, "
            "heads or sequence length (its shapes and arithmetic are still shown)")
        self.cells = cells


def resolve_device(name: str) -> str:
    """'auto' picks CUDA, then MPS, then CPU; an unavailable request falls back to the
    CPU (``run`` then says so in the trace's notes, see ``fallback_note``)."""
    if name in ("auto", "cuda") and torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if name in ("auto", "mps") and mps is not None and mps.is_available():
        return "mps"
    return "cpu"


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


def run(
    request: EngineRequest | MHAConfig,
    *,
    cancel: Callable[[], bool] | None = None,
    progress: Callable[[float], None] | None = None,
    **fields,
) -> Trace:
    """Compute every stage of the request's config on its device.

    ``run(cfg, mode=..., show_batch=..., ...)`` is the same as
    ``run(EngineRequest(cfg, mode=..., ...))``. Raises MemoryBudgetError before
    allocating when the chosen mode's estimate exceeds the budget, and Cancelled
    soon after ``cancel()`` turns true. A CUDA out-of-memory error, or a GPU asked
    for that this machine lacks, falls back to the CPU with a note in ``Trace.notes``.
    """
    if not isinstance(request, EngineRequest):
        request = EngineRequest(request, **fields)
    elif fields:
        raise TypeError(f"run(request) takes no other fields, got {sorted(fields)}")
    cfg = request.config
    device = resolve_device(cfg.device)
    unavailable = fallback_note(cfg.device, device)  # asked for a GPU that is not here
    notes = (unavailable,) if unavailable else ()
    try:
        return _run_on(request, device, notes, cancel, progress)
    except torch.cuda.OutOfMemoryError:
        if device != "cuda":
            raise
        torch.cuda.empty_cache()
        note = ("the GPU ran out of memory, so this run was computed on the CPU",)
        return _run_on(request, "cpu", note, cancel, progress)


def choose_mode(request: EngineRequest, device: str) -> tuple[str, int, int]:
    """(mode, estimated peak bytes, budget) for the request on ``device``, checked
    before anything is allocated."""
    if request.mode not in MODES:
        raise ValueError(f"mode must be 'full', 'windowed', 'rows' or None, got {request.mode!r}")
    cfg = request.config
    est: Estimate = estimate(cfg, host_copy=cfg.dtype != "float32" or device != "cpu")
    family = family_of(cfg)
    if request.mode == "rows" and family.computed_whole:
        raise ValueError(f"{family.title} is computed whole: it has no mode 'rows'")
    if family.computed_whole and (request.mode == "windowed" or not est.full_allowed):
        raise WholeOnlyError(family.title, cfg.batch * cfg.H * cfg.T * cfg.S)
    budget = device_budget(device) if request.budget_bytes is None else request.budget_bytes
    where = "the GPU" if device == "cuda" else "the CPU" if device == "cpu" else device
    if request.mode is None:
        chosen, peak = est.choose(budget, where)
        return chosen, peak, budget
    if request.mode == "full" and not est.full_allowed:
        raise DisplayCapError(cfg.batch * cfg.H * cfg.T * cfg.S)
    # a forced mode is still held to the budget: the guard is the point ("rows" holds less
    # than "windowed": one element, fewer rows, no whole context)
    peak = est.full_bytes if request.mode == "full" else est.windowed_bytes
    if peak > budget:
        raise MemoryBudgetError(peak, budget, where)
    return request.mode, peak, budget


def _run_on(request: EngineRequest, device: str, notes: tuple[str, ...],
            cancel: Callable[[], bool] | None, progress: Callable[[float], None] | None) -> Trace:
    chosen, peak, budget = choose_mode(request, device)
    cfg = request.config
    family = family_of(cfg)
    source = weight_sources.source_for(cfg)
    layout = Layout.of(cfg, chosen, request.show_batch, request.show_rows_from)
    work = Work(planned_flops(cfg, layout), cancel, progress)
    work.check()
    start = time.perf_counter()
    dtype = TORCH_DTYPES[cfg.dtype]
    clock = Clock(device)
    def weights() -> dict[str, torch.Tensor]:  # made (or reused) only by a family that reads them
        return weight_sources.WEIGHT_CACHE.get(source, cfg, device, dtype, work.check)

    # the kept tensors' first axis holds every batch element in full mode, else the shown one
    copies = HostCopies(device, shown=layout.show_batch if layout.full else 0)
    job = LayerJob(cfg, source, weights, device, dtype, layout, work, clock, copies)
    done = importlib.import_module(family.compute_module).run_layer(job)
    # the one wait: the device's work is done here; the early copies to the host may still be
    # landing, and a view reading one waits for them (DeviceArray)
    norms = tuple(float(n) for n in to_numpy(done.norms))
    tokens_q, tokens_kv = source.tokens(cfg)
    return Trace(
        config=cfg, mode=chosen, device=device, tokens_q=tokens_q, tokens_kv=tokens_kv,
        tensors=done.stored, weights=HostWeights(done.weights), output=done.stored[StageId.output].get("Y"),
        timings=dict(clock.totals), seconds=time.perf_counter() - start,
        batch_index=None if layout.full else layout.show_batch, rows=layout.rows, row_ids=layout.picked,
        masked_rows=done.blind_rows, estimate_bytes=peak, budget_bytes=budget,
        notes=tuple(notes) + source.notes(cfg) + done.notes, output_norms=norms,
    )


def planned_flops(cfg: MHAConfig, layout: Layout) -> int:
    """The FLOPs progress is counted against: the plan's, or in rows mode the stages before the
    scores for one batch element and the picked rows' attention (as the run advances them)."""
    plan = build_plan(cfg)
    if layout.picked is None:
        return plan.total_flops
    before = plan.stage_ids.index(StageId.scores)
    inputs = sum(s.flops for s in plan.stages[:before]) // cfg.batch
    return inputs + cfg.H * len(layout.picked) * cfg.S * (4 * cfg.d_k + 6)


class HostWeights(Mapping):
    """The weights as float32 numpy, made on access: CPU float32 weights are shared,
    others converted only when read, so a run keeps no float32 copy of them."""

    def __init__(self, tensors: dict[str, torch.Tensor]):
        self._tensors = tensors

    def __getitem__(self, name: str) -> np.ndarray:
        return copy_to_host(self._tensors[name]).numpy()

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def __reduce__(self):
        # pickled (a trace sent from another process) it is the plain numpy dict it stands for,
        # so the receiving side needs no torch to read it
        return dict, (dict(self.items()),)
