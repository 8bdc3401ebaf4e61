"""What the causal tools cost on a decoder: head ablation, activation patching, the logit lens.

A script that prints figures, not a test:

    python benchmarks/bench_causal.py [--weights gemma3-270m] [--threads 1,2] [--runs 3]

Goals on a 2-core CPU (Gemma 3 270M, 72 heads):

1. every head switched off in turn on 40 random tokens shown twice (81 tokens with <bos>),
   the second copy's loss read each time: ≤ 30 s;
2. every head patched from a clean prompt into a corrupted one (the worked example, 15
   tokens): ≤ 30 s;
3. the logit lens over that prompt (19 readouts of 15 positions) and the attribution of its
   last token: ≤ 3 s.

The model is loaded once first (not timed). Each figure is the median of ``--runs`` runs in
wall-clock seconds, with the process's CPU seconds beside it: on a machine other people share,
wall time stretches with their load while CPU seconds (for one thread) stay near what a quiet
machine would take. The load average is printed before and after each measurement; torch's
thread pool suffers most from a busy machine (two threads waiting on each other at every
operation), so each thread count asked for is measured.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

REPEAT = 40
GOALS_S = {"ablation": 30.0, "patching": 30.0, "lens": 3.0}


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _measure(name: str, work, runs: int) -> dict:
    walls, cpus, loads = [], [], []
    result = None
    for _ in range(runs):
        before = _load()
        wall, cpu = time.perf_counter(), time.process_time()
        result = work()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        loads.append(f"{before} → {_load()}")
    return {"name": name, "wall": statistics.median(walls), "cpu": statistics.median(cpus),
            "walls": walls, "loads": loads, "result": result}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights", default="gemma3-270m")
    parser.add_argument("--threads", default="1,2", help="torch thread counts to measure, e.g. 1,2")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    import torch

    from mha_explorer.core.models.causal import report
    from mha_explorer.core.models.causal.example import ANSWER, CLEAN, CORRUPT, WRONG

    t = time.perf_counter()
    report.lens(args.weights, "load")  # loads the model (and torch's first kernels)
    print(f"{args.weights} loaded and warmed in {time.perf_counter() - t:.1f} s; load average {_load()}")
    for threads in (int(n) for n in args.threads.split(",")):
        torch.set_num_threads(threads)
        print(f"\n-- {threads} thread(s) --")
        found = [
            _measure("ablation", lambda: report.repeat_ablation(args.weights, REPEAT, 0), args.runs),
            _measure("patching", lambda: report.patch(args.weights, CLEAN, CORRUPT, ANSWER, WRONG),
                     args.runs),
            _measure("lens", lambda: report.lens(args.weights, CLEAN), args.runs),
        ]
        for f in found:
            goal = GOALS_S[f["name"]]
            verdict = "within" if f["wall"] <= goal else "over"
            print(f"{f['name']:>9}: median {f['wall']:6.2f} s wall, {f['cpu']:6.2f} s CPU "
                  f"({verdict} the {goal:g} s goal); runs {', '.join(f'{w:.1f}' for w in f['walls'])} s; "
                  f"load {'; '.join(f['loads'])}")
        a, p, lens = (f["result"] for f in found)
        print(f"  ablation: {len(a.token_ids)} tokens, loss first copy {a.loss_first:.3f}, "
              f"second {a.loss_second:.3f}")
        print(f"  patching: {len(p.clean_ids)} tokens; lens: {len(lens.token_ids)} tokens, "
              f"attribution sum − logit = {lens.attribution.total - lens.attribution.logit:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
