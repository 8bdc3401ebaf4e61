"""A trained decoder's prompt pass: the memory it takes, measured, beside the estimate the
decode command checks against the budget (core/models/prompt_memory.py).

For each prompt length, generates one token after a prompt of that many tokens and
prints the peak resident memory above what the loaded model already held (sampled every
2 ms) and the estimate, which should stay above it. One model load; a few minutes on a
busy machine (the load average is printed).

    python benchmarks/bench_prompt_memory.py [--weights gemma3-270m] [--tokens 1000 2000 3000]
"""

from __future__ import annotations

import argparse
import os
import threading
import time

import psutil

from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.prompt_memory import prompt_bytes

WORDS = ("the", "cat", "sat", "on", "a", "mat", "and", "then", "it", "ran", "off", "to", "see")


def main() -> None:
    decoders = [key for key, m in MODELS.items() if m.causal]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", choices=decoders, default=decoders[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[1000, 2000, 3000])
    args = parser.parse_args()
    model = MODELS[args.weights]
    report = runtime.part(model, "report")
    report.decode_report("warm up", 1)  # the model loaded and kept
    me = psutil.Process()
    for words in args.tokens:
        text = " ".join(WORDS[i % len(WORDS)] for i in range(words))
        base = me.memory_info().rss
        peak, done = [base], threading.Event()

        def watch(peak=peak, done=done) -> None:
            while not done.is_set():
                peak[0] = max(peak[0], me.memory_info().rss)
                time.sleep(0.002)

        watcher = threading.Thread(target=watch)
        watcher.start()
        began = time.perf_counter()
        out = report.decode_report(text, 1)
        took = time.perf_counter() - began
        done.set()
        watcher.join()
        tokens = out["prompt_tokens"]
        measured = (peak[0] - base) / 2**20
        print(f"load {os.getloadavg()[0]:.1f}  {tokens:,} tokens: measured {measured:,.0f} MiB, "
              f"estimate {prompt_bytes(model, tokens, 1) / 2**20:,.0f} MiB  ({took:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
