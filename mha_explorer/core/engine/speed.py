"""How fast this machine multiplies, measured in a fraction of a second, so a long
computation can be announced with its likely time before it starts."""

from __future__ import annotations

import functools
import time

import torch

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.build import build_plan

PROBE_SIZE = 512  # a square matmul of the size attention's blocks are made of
PROBE_SECONDS = 0.1


def flops_per_second(device: str = "cpu") -> float:
    """float32 matmul speed on ``device`` (FLOP/s), timed over about PROBE_SECONDS."""
    n = PROBE_SIZE
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    torch.mm(a, b)  # the first call pays for thread start-up, not for arithmetic
    done, start = 0, time.perf_counter()
    while True:
        torch.mm(a, b)
        done += 2 * n ** 3
        if device == "cuda":
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        if elapsed >= PROBE_SECONDS:
            return done / elapsed


@functools.cache
def measured_speed(device: str) -> float:
    """``flops_per_second`` measured once per device in a process: a window asks before
    every run, and a tenth of a second each time would be a tenth of a second lost."""
    return flops_per_second(device)


def every_row_seconds(config: MHAConfig, device: str) -> float:
    """The likely seconds of computing every query row of ``config``: its plan's FLOPs at
    this machine's measured matmul speed (a lower bound: softmax and copies add to it)."""
    return build_plan(config).total_flops / measured_speed(device)
