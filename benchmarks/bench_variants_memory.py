"""The memory guard's estimate for the variants (latent attention, RoPE, positions added to X)
against the peak RSS growth a run really causes, each in a fresh process as in bench_memory.py.

    python benchmarks/bench_variants_memory.py

A ratio under 1 means the guard would let through a run larger than it thinks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_memory import CHILD  # noqa: E402 - the same measuring child

ROOT = Path(__file__).resolve().parents[1]
MiB = 1 << 20
LITE = dict(d_model=2048, n_heads=16, mla=True, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
            v_head_dim=128, positions="rope", causal=True)
V3 = dict(LITE, d_model=7168, n_heads=128, q_lora_rank=1536)

CONFIGS = [
    ("MLA V2-Lite shape B2 T512 fp32", dict(LITE, batch=2, seq=512), "full"),
    ("MLA V2-Lite shape B1 T64 bf16", dict(LITE, batch=1, seq=64, dtype="bfloat16"), "full"),
    ("MLA V3 shape B1 T16 fp32 (weights)", dict(V3, batch=1, seq=16), "full"),
    ("RoPE D256 H8 B4 T512 causal", dict(d_model=256, n_heads=8, batch=4, seq=512, positions="rope",
                                         causal=True), "full"),
    ("sinusoidal D256 H8 B4 T512", dict(d_model=256, n_heads=8, batch=4, seq=512, positions="sinusoidal"),
     "full"),
    ("RoPE D512 H8 B2 T4096 window 256", dict(d_model=512, n_heads=8, batch=2, seq=4096, positions="rope",
                                              causal=True, window=256), "windowed"),
    ("learned D512 H8 B2 T4096", dict(d_model=512, n_heads=8, batch=2, seq=4096, positions="learned"),
     "windowed"),
]


def main() -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    print(f"{'config':<38} {'mode':<9} {'measured':>12} {'estimate':>12} {'ratio':>6}")
    for label, kw, mode in CONFIGS:
        r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(kw), mode], capture_output=True,
                           text=True, env=env, timeout=600)
        if r.returncode:
            print(f"{label:<38} failed: {r.stderr.strip().splitlines()[-1]}")
            continue
        d = json.loads(r.stdout)
        print(f"{label:<38} {d['mode']:<9} {d['measured'] / MiB:>8.1f} MiB {d['estimate'] / MiB:>8.1f} MiB "
              f"{d['estimate'] / d['measured']:>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
