"""engine.run against torch's own attention, on the CPU and, where there is one, on a GPU
(prints figures, asserts nothing).

CPU: engine.run against nn.MultiheadAttention with per-head weights (need_weights=True,
average_attn_weights=False), fp32, weights warm; each row the median of alternating runs of both.
Goal: engine / torch <= 1.25 at (768, 12, 1, 1024) and (4096, 32, 1, 2048).

GPU (when CUDA is available): for each config, the engine's run until it returns (its one
wait included: the device's work done; the shown batch element's pieces may still be crossing
to the host), the device's time for its stages (CUDA events), then reading every stage's maps
of the shown element as the views do (waiting for those pieces, copying any other); against
projections + F.scaled_dot_product_attention + W_O, and nn.MultiheadAttention with per-head
weights where H = Hkv, each waited for. Goals: the whole trace at (D 4096, H 32, Hkv 8, B 1,
T 4096) within 1 s; at most 2x projections + SDPA at (768, 12, 1, 1024).

    python benchmarks/bench_engine.py [--cpu-only] [--gpu-only]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from mha_explorer.core.config import MHAConfig  # noqa: E402
from mha_explorer.core.display.head_maps import build_stage_maps  # noqa: E402
from mha_explorer.core.engine import runner as engine  # noqa: E402

CPU_CONFIGS = [(512, 8, 8, 4, 16), (768, 12, 12, 2, 128), (768, 12, 12, 1, 1024), (4096, 32, 32, 1, 2048)]
CPU_GOAL = 1.25  # at the last two
GPU_CONFIGS = [(512, 8, 8, 1, 16), (768, 12, 12, 1, 1024), (4096, 32, 8, 1, 4096), (4096, 32, 32, 1, 2048)]
GPU_GOALS = {(768, 12, 12, 1, 1024): "<= 2x projections + SDPA", (4096, 32, 8, 1, 4096): "<= 1 s"}


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def config(D: int, H: int, Hkv: int, B: int, T: int, device: str) -> MHAConfig:
    return MHAConfig(d_model=D, n_heads=H, n_kv_heads=Hkv, batch=B, seq=T, device=device)


def wall(fn, device: str) -> float:
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    if device == "cuda":  # kernels run asynchronously: wait for them
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def torch_mha(cfg: MHAConfig, x: torch.Tensor):
    mha = torch.nn.MultiheadAttention(cfg.d_model, cfg.H, bias=cfg.bias, batch_first=True)
    mha = mha.eval().to(cfg.device)

    def go():
        with torch.no_grad():
            mha(x, x, x, need_weights=True, average_attn_weights=False)
    return go


def projections_and_sdpa(cfg: MHAConfig, x: torch.Tensor):
    """Q, K, V projections, F.scaled_dot_product_attention (GQA without repeating K and V),
    the merge and W_O: the least any engine computing this layer must do."""
    D, B, T, H, Hkv, dk = cfg.d_model, cfg.batch, cfg.T, cfg.H, cfg.Hkv, cfg.d_k
    make = dict(device=cfg.device)
    w_q, w_o = torch.randn(D, D, **make) / D ** 0.5, torch.randn(D, D, **make) / D ** 0.5
    w_k, w_v = (torch.randn(Hkv * dk, D, **make) / D ** 0.5 for _ in range(2))

    def go():
        with torch.no_grad():
            q = F.linear(x, w_q).view(B, T, H, dk).transpose(1, 2)  # [B, H, T, d_k]
            k = F.linear(x, w_k).view(B, T, Hkv, dk).transpose(1, 2)  # [B, Hkv, T, d_k]
            v = F.linear(x, w_v).view(B, T, Hkv, dk).transpose(1, 2)
            o = F.scaled_dot_product_attention(q, k, v, enable_gqa=Hkv != H)  # [B, H, T, d_k]
            F.linear(o.transpose(1, 2).reshape(B, T, D), w_o)
    return go


def bench_cpu(repeats_small: int = 9, repeats_large: int = 3) -> None:
    print(f"\nCPU: {torch.get_num_threads()} torch threads ({load()})")
    print(f"{'D':>5} {'H':>3} {'B':>2} {'T':>5} {'engine':>9} {'torch':>9} {'ratio':>6}")
    for D, H, Hkv, B, T in CPU_CONFIGS:
        cfg = config(D, H, Hkv, B, T, "cpu")
        request = engine.EngineRequest(cfg, budget_bytes=1 << 40)
        theirs = torch_mha(cfg, torch.randn(B, T, D))

        def ours(request=request):
            engine.run(request)

        ours(), theirs()  # warm: weights made, kernels loaded
        repeats = repeats_large if D * T > 1 << 22 else repeats_small
        mine, torch_times = [], []
        for _ in range(repeats):  # alternately, so both meet the same load
            mine.append(wall(ours, "cpu"))
            torch_times.append(wall(theirs, "cpu"))
        m, t = statistics.median(mine), statistics.median(torch_times)
        goal = f"  (goal <= {CPU_GOAL})" if (D, T) in ((768, 1024), (4096, 2048)) else ""
        print(f"{D:>5} {H:>3} {B:>2} {T:>5} {m * 1e3:7.1f}ms {t * 1e3:7.1f}ms {m / t:6.2f}{goal}",
              flush=True)
    print(f"({load()})")


def bench_gpu(repeats: int = 7) -> None:
    print(f"\nGPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"TF32 matmul {'on' if torch.backends.cuda.matmul.allow_tf32 else 'off'} ({load()})")
    print(f"{'D':>5} {'H':>3} {'Hkv':>3} {'B':>2} {'T':>5} {'mode':>8} {'run':>9} {'stages':>9} "
          f"{'maps':>9} {'proj+sdpa':>9} {'nn.MHA':>9} {'run/ref':>7}  goal")
    for D, H, Hkv, B, T in GPU_CONFIGS:
        cfg = config(D, H, Hkv, B, T, "cuda")
        request = engine.EngineRequest(cfg)
        x = torch.randn(B, T, D, device="cuda")
        reference = projections_and_sdpa(cfg, x)
        mha = torch_mha(cfg, x) if Hkv == H else None
        traces = []

        def ours(request=request, traces=traces):
            traces.append(engine.run(request))

        def maps(traces=traces):  # every stage's maps of the shown element, as the views read them
            trace = traces[-1]
            for stage in trace.tensors:
                build_stage_maps(trace, stage, 0)

        ours(), maps(), reference()  # warm: weights and inputs made, kernels loaded
        if mha is not None:
            mha()
        runs, stages, drawn, refs, theirs = [], [], [], [], []
        for _ in range(repeats):
            runs.append(wall(ours, "cuda"))
            stages.append(sum(traces[-1].timings.values()))
            drawn.append(wall(maps, "cuda"))
            refs.append(wall(reference, "cuda"))
            if mha is not None:
                theirs.append(wall(mha, "cuda"))
            del traces[:-1]
        run_s, ref_s = statistics.median(runs), statistics.median(refs)
        mha_s = f"{statistics.median(theirs) * 1e3:7.2f}ms" if theirs else f"{'-':>9}"
        goal = GPU_GOALS.get((D, H, Hkv, B, T), "")
        print(f"{D:>5} {H:>3} {Hkv:>3} {B:>2} {T:>5} {traces[-1].mode:>8} {run_s * 1e3:7.2f}ms "
              f"{statistics.median(stages) * 1e3:7.2f}ms {statistics.median(drawn) * 1e3:7.2f}ms "
              f"{ref_s * 1e3:7.2f}ms {mha_s} {run_s / ref_s:7.2f}  {goal}", flush=True)
        traces.clear()
        torch.cuda.empty_cache()
    print("run: engine.run until it returns (the device's work done); stages: the device's time "
          "by CUDA events; maps: every stage's maps of the shown element read as the views do, the "
          f"early copies waited for and anything else copied ({load()})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu-only", action="store_true")
    parser.add_argument("--gpu-only", action="store_true")
    args = parser.parse_args()
    print(f"torch {torch.__version__}; {load()}")
    if not args.gpu_only:
        bench_cpu()
    if torch.cuda.is_available() and not args.cpu_only:
        bench_gpu()
    elif not args.cpu_only:
        print("\nGPU: no CUDA device here: the GPU figures are not measured")


if __name__ == "__main__":
    main()
