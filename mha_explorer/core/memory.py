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
from dataclasses import dataclass

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.plan import build_plan
from mha_explorer.core.units import format_bytes  # noqa: F401 - re-exported for callers of memory

DEFAULT_BUDGET_FRACTION = 0.5  # of the RAM (or VRAM) available when the run starts
BUDGET_ENV = "MHA_EXPLORER_MEMORY_BUDGET"
# Above this many attention cells the full trace is more than any screen can show.
FULL_DETAIL_MAX_CELLS = 1 << 24
SHOWN_MAX_CELLS = 1 << 23  # H × rows × S kept for display in windowed mode
SHOWN_MAX_ROWS = 512
CHUNK_MAX_CELLS = 1 << 22  # H × rows × S computed at once in windowed mode


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


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(?:i?[bB])?\s*$")


def parse_bytes(text: str) -> int:
    """'4G', '512MiB', '1000000' -> bytes; ValueError with a clear message otherwise."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"cannot read '{text}' as a size; write e.g. 4G or 512M")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * scale)


def available_ram() -> int:
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:  # psutil is a dependency; this keeps odd installs working
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def default_budget(available: int | None = None) -> int:
    """The budget from the environment override, else a fraction of what is free."""
    env = os.environ.get(BUDGET_ENV)
    if env:
        return parse_bytes(env)
    free = available_ram() if available is None else available
    return int(free * DEFAULT_BUDGET_FRACTION)


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


def chunk_rows(cfg: MHAConfig) -> int:
    return max(1, min(cfg.T, CHUNK_MAX_CELLS // (cfg.H * cfg.S)))


def estimate(cfg: MHAConfig, host_copy: bool | None = None) -> Estimate:
    """Peak bytes for both ways of computing.

    ``host_copy``: whether results need a float32 copy on the host (any dtype
    other than float32, or a GPU); None guesses from the config.
    """
    plan = build_plan(cfg)
    e = cfg.elem_bytes
    if host_copy is None:
        host_copy = cfg.dtype != "float32" or cfg.device not in ("cpu", "auto")
    B, T, S, D, H, dk, kvD = cfg.batch, cfg.T, cfg.S, cfg.d_model, cfg.H, cfg.d_k, cfg.kv_dim
    weights = plan.memory.weights
    repeat = 2 * B * H * S * dk * e if cfg.Hkv != H else 0  # K, V repeated for GQA
    temp = B * H * T * S * e  # the unscaled product before masking
    full = weights + plan.memory.activations + repeat + temp
    if host_copy:
        full += plan.memory.activations * 4 // e

    rows, chunk = shown_rows(cfg), chunk_rows(cfg)
    # one batch element's X, X_kv, Q, K, V, (repeated K, V), context, merged, Y
    per_elem = (3 * T * D + S * D + 2 * S * kvD + (2 * H * S * dk if cfg.Hkv != H else 0)
                + H * T * dk) * e
    attn_chunk = 3 * H * chunk * S * e
    kept = (per_elem + 2 * H * rows * S * e) * (4 // e if host_copy else 1)
    windowed = weights + 2 * per_elem + attn_chunk + kept
    return Estimate(full, windowed, rows, chunk, B * H * T * S <= FULL_DETAIL_MAX_CELLS)
