"""The memory guard's estimate against the peak RSS growth a run really causes.

Each config runs in a fresh Python process: torch and the engine are imported,
the peak-RSS mark is reset (``/proc/self/clear_refs``), the run is made, and the
growth is VmHWM minus the RSS before the run. Linux only.

    python benchmarks/bench_memory.py            # the table
    python benchmarks/bench_memory.py --quick    # the small configs only
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MiB = 1 << 20

CHILD = r"""
import json, sys
from mha_explorer.core.engine import runner as engine
from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.memory import estimate

def status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024

kw, mode = json.loads(sys.argv[1]), sys.argv[2]
cfg = MHAConfig(device="cpu", **kw)
est = estimate(cfg, host_copy=cfg.dtype != "float32")
if sys.argv[3] == "warm":
    # a tiny run of the same kind first: the library code it pages in (file-backed, part
    # of RSS) is then not counted, only what the run itself allocates
    warm = dict(kw, d_model=4 * kw.get("n_heads", 8), seq=4, batch=1)
    warm.update(kv_seq=5 if kw.get("kv_seq") else None)
    engine.run(engine.EngineRequest(MHAConfig(device="cpu", **warm), mode=mode, budget_bytes=1 << 62))
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # VmHWM := VmRSS
base = status("VmRSS")
trace = engine.run(engine.EngineRequest(cfg, mode=mode, budget_bytes=1 << 62))
grown = status("VmHWM") - base
print(json.dumps({"mode": trace.mode, "measured": grown,
                  "estimate": est.full_bytes if trace.mode == "full" else est.windowed_bytes}))
"""

# (label, config fields, mode): weight-heavy, activation-heavy, full and windowed, three dtypes
CONFIGS = [
    ("weights D8192 H64 T16 fp32", dict(d_model=8192, n_heads=64, batch=1, seq=16), "full"),
    ("weights D8192 H64 T16 fp16", dict(d_model=8192, n_heads=64, batch=1, seq=16, dtype="float16"), "full"),
    ("weights D8192 H64 T16 bf16", dict(d_model=8192, n_heads=64, batch=1, seq=16, dtype="bfloat16"),
     "full"),
    ("weights D4096 GQA32/8 T64 fp32", dict(d_model=4096, n_heads=32, n_kv_heads=8, batch=1, seq=64),
     "full"),
    ("acts D256 H8 B4 T512 fp32", dict(d_model=256, n_heads=8, batch=4, seq=512), "full"),
    ("acts D256 H8 B4 T512 fp16", dict(d_model=256, n_heads=8, batch=4, seq=512, dtype="float16"), "full"),
    ("acts D256 H8 B4 T512 bf16 causal", dict(d_model=256, n_heads=8, batch=4, seq=512, causal=True,
                                              dtype="bfloat16"), "full"),
    ("acts D512 H8 B2 T4096 fp32 win", dict(d_model=512, n_heads=8, batch=2, seq=4096), "windowed"),
    ("acts D512 H8 B2 T4096 fp16 win", dict(d_model=512, n_heads=8, batch=2, seq=4096, dtype="float16"),
     "windowed"),
    ("acts D512 GQA8/2 B1 T16384 bf16 win causal",
     dict(d_model=512, n_heads=8, n_kv_heads=2, batch=1, seq=16384, causal=True, dtype="bfloat16"),
     "windowed"),
    ("acts D64 H4 B1 T65536 fp32 win causal", dict(d_model=64, n_heads=4, batch=1, seq=65536, causal=True),
     "windowed"),
    ("weights D8192 H64 T16 fp16 win", dict(d_model=8192, n_heads=64, batch=2, seq=16, dtype="float16"),
     "windowed"),
    ("cross D1024 H16 B2 T256 S1024 fp32", dict(d_model=1024, n_heads=16, batch=2, seq=256, kv_seq=1024),
     "full"),
    ("small D512 H8 B2 T128 fp32", dict(d_model=512, n_heads=8, batch=2, seq=128), "full"),
]
QUICK = [c for c in CONFIGS if c[0].startswith(("small", "acts D256"))]


def measure(fields: dict, mode: str, warm: bool = False) -> dict:
    """{"mode", "measured", "estimate"} in bytes, from a fresh process. ``warm``: after a
    tiny run of the same kind, so the library pages a first run touches are not counted."""
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(fields), mode,
                           "warm" if warm else "cold"], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr else "child failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    configs = QUICK if "--quick" in sys.argv else CONFIGS
    print(f"{'config':44} {'mode':9} {'estimate':>10} {'measured':>10} {'est/meas':>8}")
    for label, fields, mode in configs:
        r = measure(fields, mode)
        print(f"{label:44} {r['mode']:9} {r['estimate'] / MiB:8.1f}Mi {r['measured'] / MiB:8.1f}Mi "
              f"{r['estimate'] / max(1, r['measured']):8.2f}", flush=True)


if __name__ == "__main__":
    main()
