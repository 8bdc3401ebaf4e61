"""The memory guard's estimate holds: peak RSS growth of a run, measured in a fresh
process (VmHWM after resetting it), lies within 0.8-1.25x of the estimate; masks and
score blocks never grow with the whole T×S matrix."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.memory import estimate

pytestmark = pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_memory.py"
MiB = 1 << 20


def measure(fields: dict, mode: str, warm: bool = False) -> dict:
    spec = importlib.util.spec_from_file_location("bench_memory", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_memory", module)
    spec.loader.exec_module(module)
    return module.measure(fields, mode, warm)


@pytest.mark.parametrize("fields,mode,warm", [
    # weight-heavy: 256 and 128 MiB of weights, so the 10-25 MiB that a first run pages in
    # from the libraries (more on a busy machine, more for half precision) cannot swing
    # the ratio out of range
    (dict(d_model=4096, n_heads=32, batch=1, seq=16), "full", False),
    (dict(d_model=4096, n_heads=32, batch=1, seq=16, dtype="float16"), "full", False),
    # activations: 72 MiB since a half-precision run keeps one element's host copy, so the
    # library pages of a first bfloat16 run (23 MiB in CI) are left out by a tiny run first
    (dict(d_model=256, n_heads=8, batch=4, seq=512, dtype="bfloat16", causal=True), "full", True),
    (dict(d_model=128, n_heads=8, n_kv_heads=2, batch=2, seq=2048), "windowed", False),
])
def test_estimate_is_within_a_quarter_of_the_measured_peak(fields, mode, warm):
    r = measure(fields, mode, warm)
    assert r["mode"] == mode
    ratio = r["estimate"] / r["measured"]
    assert 0.8 <= ratio <= 1.25, (f"estimate {r['estimate'] / MiB:.1f} MiB, measured "
                                  f"{r['measured'] / MiB:.1f} MiB")


@pytest.mark.slow
def test_a_causal_run_of_65536_tokens_stays_within_its_estimate():
    """T×S is 4.3 billion cells (16 GiB of float32 scores): only blocks of rows may exist."""
    fields = dict(d_model=16, n_heads=1, batch=1, seq=65_536, causal=True)
    est = estimate(MHAConfig(**fields), host_copy=False)
    assert est.windowed_bytes < 256 * MiB  # the guard expects far less than one T×S mask
    r = measure(fields, "windowed", warm=True)  # what the run allocates, not library pages
    assert r["measured"] <= est.windowed_bytes * 1.05, f"measured {r['measured'] / MiB:.1f} MiB"
    assert r["measured"] >= 0.8 * est.windowed_bytes
