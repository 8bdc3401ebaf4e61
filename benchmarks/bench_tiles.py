"""Peak memory and time of the tiled path, against the full matrix and SDPA.

A script that prints figures, not a test:

    python benchmarks/bench_tiles.py                    # d_model 4096, 32 heads, B 1, T 16384, causal
    python benchmarks/bench_tiles.py --seq 4096 --no-causal --block 64,256

Each measurement runs in a fresh child process, which reports its peak resident
memory (VmHWM from /proc/self/status) and its wall time:

- ``inputs``: only Q, K and V made, the floor both paths share;
- ``tiled``: mha_explorer.core.engine.tiled.tiled_attention with the config's mask;
- ``sdpa``: torch.nn.functional.scaled_dot_product_attention (is_causal), which on
  the CPU is itself a fused, tiled kernel.

The full T × S matrix is not built: its size comes from the tile plan (at this
size it is larger than most machines' memory, which is the point).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def peak_rss() -> int:
    """VmHWM of this process in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def child(what: str, d_model: int, heads: int, batch: int, seq: int, causal: bool,
          block: tuple[int, int], threads: int) -> dict:
    import torch
    import torch.nn.functional as F

    from mha_explorer.core.engine.tiled import tiled_attention
    from mha_explorer.core.specs.masks import MaskSpec

    torch.set_num_threads(threads)
    dk = d_model // heads
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(batch, heads, seq, dk, generator=g) for _ in range(3))  # [B, H, T, d_k]
    start = time.perf_counter()
    with torch.no_grad():
        if what == "tiled":
            out = tiled_attention(q, k, v, MaskSpec(causal=causal), block)
        elif what == "sdpa":
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        else:
            out = q
    seconds = time.perf_counter() - start
    return {"what": what, "seconds": seconds, "peak_rss": peak_rss(), "checksum": float(out[0, 0, -1].sum())}


def measure(what: str, args) -> dict:
    cmd = [sys.executable, __file__, "--child", what, "--d-model", str(args.d_model), "--heads",
           str(args.heads), "--batch", str(args.batch), "--seq", str(args.seq), "--block", args.block,
           "--threads", str(args.threads), "--causal" if args.causal else "--no-causal"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--d-model", type=int, default=4096)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=16384)
    p.add_argument("--block", default="128,128")
    p.add_argument("--causal", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--threads", type=int, default=min(os.cpu_count() or 1, 16))
    p.add_argument("--child", choices=("inputs", "tiled", "sdpa"))
    args = p.parse_args()
    from mha_explorer.core.plan.tiles import parse_block

    block = parse_block(args.block)
    if args.child:
        print(json.dumps(child(args.child, args.d_model, args.heads, args.batch, args.seq, args.causal,
                               block, args.threads)))
        return
    from mha_explorer.core.config import MHAConfig
    from mha_explorer.core.plan.tiles import tile_plan
    from mha_explorer.core.units import format_bytes, format_count

    cfg = MHAConfig(d_model=args.d_model, n_heads=args.heads, batch=args.batch, seq=args.seq,
                    causal=args.causal)
    plan = tile_plan(cfg, block)
    print(f"d_model {args.d_model}, heads {args.heads}, B {args.batch}, T = S = {args.seq:,}, "
          f"{'causal' if args.causal else 'no mask'}, block {block[0]}×{block[1]}, "
          f"{args.threads} threads, float32")
    print(f"tiles: {plan.blocks_computed:,} of {plan.blocks_total:,} computed per head "
          f"({plan.blocks_skipped:,} skipped); FLOPs {format_count(plan.flops_tiled)} tiled, "
          f"{format_count(plan.flops)} for the whole matrix")
    print(f"full matrix B·H·T·S: {format_bytes(plan.full_matrix_bytes)} (one copy; scores and "
          f"weights make two)")
    print(f"tiled plan peak:     {format_bytes(plan.peak_bytes)} (Q, K, V, O and one row block)")
    results = {what: measure(what, args) for what in ("inputs", "tiled", "sdpa")}
    floor = results["inputs"]["peak_rss"]
    for what in ("inputs", "tiled", "sdpa"):
        r = results[what]
        extra = r["peak_rss"] - floor
        print(f"{what:>7}: peak RSS {format_bytes(r['peak_rss'])} (+{format_bytes(max(extra, 0))} over "
              f"the inputs), {r['seconds']:.2f} s")
    tiled, sdpa = results["tiled"], results["sdpa"]
    print(f"tiled peak RSS is {tiled['peak_rss'] / plan.full_matrix_bytes:.3f}× the full matrix's size; "
          f"time {tiled['seconds'] / sdpa['seconds']:.2f}× SDPA's")


if __name__ == "__main__":
    main()
