"""Wall time and peak memory of exporting a long sequence's softmax stage, in a fresh process
each, as a person runs it (the goal: 100,000 tokens within 60 s on two cores):

    python benchmarks/bench_export_long.py                 # T = 100,000
    python benchmarks/bench_export_long.py --seq 20000 50000 100000

Prints, per T, the seconds, the peak resident memory and the rows the command said it drew.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time


def export_once(seq: int) -> tuple[float, int, str]:
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "mha_explorer", "export", "--stage", "softmax",
                               "--out", folder, "--d-model", "512", "--heads", "8", "--kv-heads", "2",
                               "--causal", "--batch", "1", "--seq", str(seq)],
                              capture_output=True, text=True, env=env, check=False)
        seconds = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"export failed ({done.returncode}): {done.stderr.strip()}")
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the largest child so far
    return seconds, peak_kib, done.stderr.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, nargs="+", default=[100_000])
    args = parser.parse_args()
    for seq in args.seq:
        seconds, peak_kib, said = export_once(seq)
        print(f"T={seq:>9,}  {seconds:6.1f} s  peak RSS so far {peak_kib / 1024:7.0f} MiB")
        print(f"  {said}")


if __name__ == "__main__":
    main()
