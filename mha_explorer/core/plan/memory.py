"""Peak-memory estimates and the budget they are checked against (no torch).

The engine computes in one of two ways:

- ``full``: every stage's tensor for every batch element is kept, so any head,
  batch element and row can be shown without recomputing;
- ``windowed``: one batch element at a time and a block of query rows at a time,
  keeping only one batch element's tensors and a window of attention rows. The
  T×S matrices are never whole in memory, so long sequences still run.

Both estimates are plain arithmetic on the config so the window can show them
before anything is allocated.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.units import format_bytes  # noqa: F401 - re-exported for callers of memory

DEFAULT_BUDGET_FRACTION = 0.5  # of the RAM (or VRAM) available when the run starts
BUDGET_ENV = "MHA_EXPLORER_MEMORY_BUDGET"
# Above this many attention cells the full trace is more than any screen can show.
FULL_DETAIL_MAX_CELLS = 1 << 24
SHOWN_MAX_CELLS = 1 << 23  # H × rows × S kept for display in windowed mode
SHOWN_MAX_ROWS = 512
CHUNK_MAX_CELLS = 1 << 22  # H × rows × S computed at once in windowed mode
# torch's own first-run allocations (thread pools, kernel workspaces), measured as
# the peak RSS growth of the smallest run in a fresh process (benchmarks/bench_memory.py)
RUNTIME_OVERHEAD = 11 << 20


class MemoryBudgetError(ConfigError):
    """The config would need more memory than the budget allows."""

    def __init__(self, needed: int, budget: int, where: str):
        super().__init__(
            "memory",
            f"needs about {format_bytes(needed)} on {where} but the budget is "
            f"{format_bytes(budget)}; shapes and arithmetic are still shown",
        )
        self.needed = needed
        self.budget = budget


class BudgetSettingError(ConfigError):
    """The memory budget variable holds something that is not a size."""

    def __init__(self, value: str, why: str = "is not a size"):
        shown = value if len(value) <= 40 else value[:37] + "..."
        super().__init__("memory", f"{BUDGET_ENV}={shown!r} {why}; write e.g. 4G, 512M or 1000000 "
                         "(bytes), or leave it unset for half the free memory")
        self.value = value


_SIZE = re.compile(r"^\s*(\d{1,30}(?:\.\d{1,30})?)\s*([kKmMgGtT]?)(?:i?[bB])?\s*$")
_SCALE = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
MAX_BUDGET = 1 << 60  # an exbibyte: anything larger is a typing slip, not a machine


def parse_bytes(text: str) -> int:
    """'4G', '512MiB', '1000000' -> bytes; BudgetSettingError (a ConfigError) otherwise."""
    m = _SIZE.match(text)
    if not m:
        raise BudgetSettingError(text)
    size = int(float(m.group(1)) * _SCALE[m.group(2).lower()])
    if size <= 0:
        raise BudgetSettingError(text, "is not a positive size")
    if size > MAX_BUDGET:
        raise BudgetSettingError(text, "is larger than any machine (over 1 EiB)")
    return size


def budget_from_env() -> int | None:
    """The budget set by MHA_EXPLORER_MEMORY_BUDGET, None when unset or empty;
    BudgetSettingError naming the variable and the accepted forms when it is not a size."""
    raw = os.environ.get(BUDGET_ENV)
    if raw is None or raw == "":
        return None
    return parse_bytes(raw)


def available_ram() -> int:
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:  # psutil is a dependency; this keeps odd installs working
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def default_budget(available: int | None = None, *,
                   on_bad_setting: Callable[[BudgetSettingError], None] | None = None) -> int:
    """The budget from the environment override (at most what is free), else a fraction
    of what is free.

    A bad override raises BudgetSettingError, unless ``on_bad_setting`` is given: then
    it is told (the window shows it as a warning) and the default is used.
    """
    try:
        env = budget_from_env()
    except BudgetSettingError as err:
        if on_bad_setting is None:
            raise
        on_bad_setting(err)
        env = None
    free = available_ram() if available is None else available
    if env is not None:
        # more than is free would pass the guard and end in a failed allocation: the
        # override may raise the share of free memory, not the memory itself
        return min(env, free)
    return int(free * DEFAULT_BUDGET_FRACTION)


def budget_cap_note(available: int | None = None) -> str | None:
    """A sentence when MHA_EXPLORER_MEMORY_BUDGET asks for more than is free (the budget is
    then what is free), else None: so a refusal does not seem to ignore the setting."""
    try:
        env = budget_from_env()
    except BudgetSettingError:
        return None
    free = available_ram() if available is None else available
    if env is None or env <= free:
        return None
    return (f"{BUDGET_ENV} asks for {format_bytes(env)}, more than the {format_bytes(free)} free, "
            "so the budget is what is free")


@dataclass(frozen=True)
class Estimate:
    full_bytes: int  # peak when every stage of every batch element is kept
    windowed_bytes: int  # peak when streaming one batch element and row block at a time
    shown_rows: int  # query rows kept for display in windowed mode
    chunk_rows: int  # query rows computed at once in windowed mode
    full_allowed: bool  # small enough that keeping everything is worth it

    def choose(self, budget: int, where: str = "the CPU") -> tuple[str, int]:
        """("full" | "windowed", estimated peak) within budget, else MemoryBudgetError."""
        if self.full_allowed and self.full_bytes <= budget:
            return "full", self.full_bytes
        if self.windowed_bytes <= budget:
            return "windowed", self.windowed_bytes
        raise MemoryBudgetError(min(self.full_bytes, self.windowed_bytes), budget, where)


def shown_rows(cfg: MHAConfig) -> int:
    return max(1, min(cfg.T, SHOWN_MAX_ROWS, SHOWN_MAX_CELLS // (cfg.H * cfg.S)))


def picked_rows(cfg: MHAConfig) -> tuple[int, ...]:
    """The query rows a picture of a long sequence shows, spread evenly from the first
    to the last (as many as ``shown_rows`` allows): each is computed exactly, so the map
    is a down-sampled set of exact rows, not an average of rows."""
    n, T = shown_rows(cfg), cfg.T
    if n >= T:
        return tuple(range(T))
    if n == 1:
        return (0,)
    return tuple(i * (T - 1) // (n - 1) for i in range(n))  # distinct: the step is at least 1


def chunk_rows(cfg: MHAConfig) -> int:
    return max(1, min(cfg.T, CHUNK_MAX_CELLS // (cfg.H * cfg.S)))


def estimate(cfg: MHAConfig, host_copy: bool | None = None) -> Estimate:
    """Peak bytes for both ways of computing, counted as the engine allocates.

    ``host_copy``: whether results need a float32 copy on the host (any dtype
    other than float32, or a GPU); None guesses from the config.
    """
    if host_copy is None:
        host_copy = cfg.dtype != "float32" or cfg.device not in ("cpu", "auto")
    plan = build_plan(cfg)
    weights = plan.memory.weights + RUNTIME_OVERHEAD + _positions_extra(cfg)
    whole = plan.family.whole_peak(cfg, plan, weights, host_copy)
    if whole is not None:  # a family that runs the whole batch at once: one figure for both
        cells = cfg.batch * cfg.H * cfg.T * cfg.S
        return Estimate(whole, whole, cfg.T, cfg.T, cells <= FULL_DETAIL_MAX_CELLS)
    full = weights + _peak(cfg, cfg.batch, cfg.T, host_copy, kept_whole=True, keeps=True)
    rows, chunk = shown_rows(cfg), chunk_rows(cfg)
    h = 4 if host_copy else 0  # the float32 host copy of what is kept
    kept_window = 2 * cfg.H * rows * cfg.S * (cfg.elem_bytes + h)  # scores and weights of the shown rows
    # the element shown is computed with its host copies, or it is kept while another
    # element is computed without them
    shown_now = _peak(cfg, 1, chunk, host_copy, kept_whole=False, keeps=True)
    other = _peak(cfg, 1, chunk, host_copy, kept_whole=False, keeps=False)
    shown_before = _kept_elements(cfg, 1) * (cfg.elem_bytes + h) + other if cfg.batch > 1 else 0
    windowed = weights + kept_window + max(shown_now, shown_before)
    return Estimate(full, windowed, rows, chunk, cfg.batch * cfg.H * cfg.T * cfg.S <= FULL_DETAIL_MAX_CELLS)


def _kept_elements(cfg: MHAConfig, nb: int) -> int:
    """Elements of X, X_kv, Q, K, V, context, merged and Y for ``nb`` batch elements (and the
    normalised X, q and k when the config has RMSNorms)."""
    T, S, D, qD, kvD = cfg.T, cfg.S, cfg.d_model, cfg.q_dim, cfg.kv_dim
    merged = T * qD if cfg.H > 1 and T > 1 else 0  # .contiguous() copies unless a size-1 axis moved
    normed = (T * D + (S * D if cfg.is_cross else 0) if cfg.normed_input else 0) + (
        T * qD + S * kvD if cfg.norms else 0)
    return nb * (T * D + 2 * T * qD + (S * D if cfg.is_cross else 0) + 2 * S * kvD + T * D + merged
                 + T * D + normed)


def _peak(cfg: MHAConfig, nb: int, rows: int, host_copy: bool, kept_whole: bool, keeps: bool) -> int:
    """Bytes beyond the weights for ``nb`` batch elements computed ``rows`` query rows
    at a time: the larger of the attention block's moment and the end of the stages. Every
    kept tensor stays where it was computed; with ``host_copy``, one batch element of each
    (the shown one) is also copied to the host in float32 (core/kernels/host.py)."""
    e, h = cfg.elem_bytes, (4 if host_copy and keeps else 0)
    T, S, D, H, dk, kvD = cfg.T, cfg.S, cfg.d_model, cfg.H, cfg.d_k, cfg.kv_dim
    inputs = nb * (T * D + (S * D if cfg.is_cross else 0))
    projections = nb * (T * cfg.q_dim + 2 * S * kvD)
    kv_copies = 2 * nb * S * kvD if nb > 1 and cfg.Hkv > 1 and S > 1 else 0  # K, V laid out head-major
    context = nb * H * T * dk
    block_cells = nb * H * rows * S
    block_context = nb * H * rows * dk
    mask = rows * S if cfg.mask_spec.masks_anything else 0  # one bool per cell of the block
    shown = block_cells // nb * 2 * h  # host copies of the shown element's block
    # in full mode the block is the whole context; windowed mode also holds the whole one
    whole_context = 0 if kept_whole else context * e
    attention = (whole_context + kv_copies * e + mask + max(
        block_context * e + block_cells * e,  # Q rows copied, scores made
        2 * block_cells * e + block_context * e + shown))  # scores, weights, context, their copies
    kept_cells = 2 * block_cells * e + 2 * block_cells // nb * h if kept_whole else 0
    end = _kept_elements(cfg, nb) * e + _kept_elements(cfg, 1) * h + kept_cells  # and host copies
    return max((inputs + projections) * e + attention, end)


def _positions_extra(cfg: MHAConfig) -> int:
    """Bytes positions add at their moment: X + PE beside X (and the table), or Q and K
    turned by RoPE beside the unturned ones, with the float64 angle tables and the
    rotate-half temporaries of the longer of the two."""
    e, kind = cfg.elem_bytes, cfg.positions_spec.kind
    T, S, D = cfg.T, cfg.S, cfg.d_model
    nb = cfg.batch  # full mode holds every element; windowed holds one, so this is the larger
    if kind in ("sinusoidal", "learned"):
        return (nb * (T + (S if cfg.is_cross else 0)) * D + max(T, S) * D) * e + max(T, S) * D * 8
    if kind == "rope":
        turned = nb * (T * D + S * cfg.kv_dim) * e  # the rotated Q and K are new tensors
        longest = max(T * cfg.H, S * cfg.Hkv) * nb * cfg.d_k
        return turned + 3 * longest * e + 3 * max(T, S) * cfg.d_k * 8  # x·cos, rotate_half, ·sin; angles
    return 0
