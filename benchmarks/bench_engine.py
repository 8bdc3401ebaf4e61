"""engine.run against nn.MultiheadAttention with per-head weights, side by side.

One process, fp32, weights warm (the engine reuses them while only the batch and
lengths change; nn.MultiheadAttention keeps its own). Each row is the median of
several alternating runs of both; the ratio is engine / torch. With --device cuda
both run on the GPU and each run waits for the GPU to finish.

    python benchmarks/bench_engine.py [--device cuda]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from mha_explorer.core.config import MHAConfig  # noqa: E402
from mha_explorer.core.engine import runner as engine  # noqa: E402

CONFIGS = [(512, 8, 4, 16), (768, 12, 2, 128), (768, 12, 1, 1024), (4096, 32, 1, 2048)]
GOAL = 1.25


def torch_module(cfg: MHAConfig) -> torch.nn.MultiheadAttention:
    mha = torch.nn.MultiheadAttention(cfg.d_model, cfg.H, bias=cfg.bias, batch_first=True)
    return mha.eval().to(cfg.device)


def timed(fn, device: str) -> float:
    t0 = time.perf_counter()
    fn()
    if device == "cuda":  # kernels run asynchronously: wait for them
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def compare(D: int, H: int, B: int, T: int, repeats: int, device: str) -> tuple[float, float]:
    cfg = MHAConfig(d_model=D, n_heads=H, batch=B, seq=T, device=device)
    request = engine.EngineRequest(cfg, budget_bytes=1 << 40)
    mha = torch_module(cfg)
    x = torch.randn(B, T, D, device=device)

    def theirs():
        with torch.no_grad():
            mha(x, x, x, need_weights=True, average_attn_weights=False)

    def ours():
        engine.run(request)

    ours(), theirs()  # warm: weights made, kernels loaded
    mine, torch_times = [], []
    for _ in range(repeats):
        mine.append(timed(ours, device))
        torch_times.append(timed(theirs, device))
    return statistics.median(mine), statistics.median(torch_times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    device = parser.parse_args().device
    where = torch.cuda.get_device_name() if device == "cuda" else f"{torch.get_num_threads()} CPU threads"
    print(f"torch {torch.__version__}, {where}")
    print(f"{'D':>5} {'H':>3} {'B':>2} {'T':>5} {'engine':>9} {'torch':>9} {'ratio':>6}")
    for D, H, B, T in CONFIGS:
        repeats = 3 if D * T > 1 << 22 else 9
        mine, theirs = compare(D, H, B, T, repeats, device)
        flag = "" if mine / theirs <= GOAL else f"  (goal {GOAL})"
        print(f"{D:>5} {H:>3} {B:>2} {T:>5} {mine * 1e3:7.1f}ms {theirs * 1e3:7.1f}ms "
              f"{mine / theirs:6.2f}{flag}", flush=True)


if __name__ == "__main__":
    main()
