"""What Gemma 3 270M costs: conversion, loading, maps, generation, memory.

A script that prints figures, not a test:

    python benchmarks/bench_gemma3.py [--threads N] [--skip-conversion]

Each measurement runs in a fresh child process, so nothing is cached in memory from
an earlier one (the operating system's file cache aside).

1. First-ever conversion (goal ≤ 60 s, with progress shown): the four GGUF chunks
   hashed, dequantised and written to a fresh temporary cache folder, the tokenizer
   built; about one progress text a second is printed, and the longest wait between two.
2. Warm load (goal ≤ 3 s, after torch is imported, as on a worker thread): the
   converted copy read, its SHA-256 checked, the tokenizer read. Median of 3 children.
3. A new 64-token text -> all 18 × 4 maps (goal ≤ 1 s on 2 cores), median over texts;
   and a 512-token text for scale.
4. One generation step with the KV cache (goal ≤ 150 ms): median over 16 steps after a
   16-token prompt and after a 600-token one (the local layers' caches full).
5. Resident memory after loading (goal ≤ 2 GiB), and after the work above.

The machine's load average is printed too: other processes on the same cores slow
every figure, torch's thread pool most of all.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ("attention", "lets", "every", "token", "of", "a", "text", "look", "at", "the", "others", "and",
         "the", "heads", "each", "learn", "their", "own", "way", "of", "looking", "back")


def _text(n_words: int, salt: int) -> str:
    return " ".join(WORDS[(i * 7 + salt) % len(WORDS)] for i in range(n_words))


def _text_of_tokens(tokenizer, n_tokens: int, salt: int) -> list[int]:
    """Token ids of a made-up text cut to exactly ``n_tokens`` (<bos> included)."""
    ids, _ = tokenizer.encode(_text(n_tokens, salt))
    return ids[:n_tokens]


def _threads() -> None:
    import torch

    wanted = os.environ.get("BENCH_THREADS")
    if wanted:
        torch.set_num_threads(int(wanted))


def child_convert(cache: str) -> dict:
    os.environ["MHA_EXPLORER_CACHE_DIR"] = cache
    from mha_explorer.core.models.gemma3 import convert

    texts: list[tuple[float, float, str]] = []
    t0 = time.perf_counter()

    def progress(fraction: float, text: str) -> None:
        texts.append((time.perf_counter() - t0, fraction, text))

    found = convert.prepare(progress)
    shown = [entry for i, entry in enumerate(texts)  # about one line a second, and the last
             if i == len(texts) - 1 or int(entry[0]) != int(texts[i + 1][0])]
    gaps = [b[0] - a[0] for a, b in zip(texts, texts[1:], strict=False)]
    return {"seconds": time.perf_counter() - t0, "progress": shown, "reports": len(texts),
            "longest_gap_s": max(gaps, default=0.0), "weights_bytes": found.weights_bytes,
            "tokenizer_bytes": found.tokenizer_bytes}


def child_load() -> dict:
    import psutil
    import torch  # noqa: F401 - imported before the clock starts, as on the worker thread

    _threads()
    proc = psutil.Process()
    rss0 = proc.memory_info().rss
    from mha_explorer.core.models.gemma3.model import load_model

    t = time.perf_counter()
    load_model()
    return {"load_s": time.perf_counter() - t, "rss_loaded_gb": proc.memory_info().rss / 2**30,
            "rss_growth_gb": (proc.memory_info().rss - rss0) / 2**30}


def child_work() -> dict:
    import psutil
    import torch

    _threads()
    from mha_explorer.core.models.gemma3.generate import generate
    from mha_explorer.core.models.gemma3.model import load_model

    model = load_model()
    proc = psutil.Process()
    rss_loaded = proc.memory_info().rss
    model.attention_maps(_text_of_tokens(model.tokenizer, 16, 99))  # one-time set-up in torch
    maps_s: dict[int, list[float]] = {}
    for n_tokens, repeats in ((64, 5), (512, 1)):
        for salt in range(repeats):
            ids = _text_of_tokens(model.tokenizer, n_tokens, salt)
            t = time.perf_counter()
            model.attention_maps(ids)
            maps_s.setdefault(len(ids), []).append(time.perf_counter() - t)
    steps_ms = {}
    prefill_s = {}
    for n_tokens in (16, 600):
        made = generate(model, _text_of_tokens(model.tokenizer, n_tokens, 7), 16, stop_at_eos=False)
        steps_ms[n_tokens] = 1000 * statistics.median(s.seconds for s in made.steps)
        prefill_s[n_tokens] = made.prefill_seconds
    return {"threads": torch.get_num_threads(),
            "maps_s": {T: statistics.median(v) for T, v in maps_s.items()},
            "step_ms": steps_ms, "prefill_s": prefill_s,
            "rss_loaded_gb": rss_loaded / 2**30, "rss_after_gb": proc.memory_info().rss / 2**30}


def _run(kind: str, *args: str, threads: str | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if threads:
        env["BENCH_THREADS"] = threads
    out = subprocess.run([sys.executable, __file__, "--child", kind, *args], capture_output=True,
                         text=True, env=env, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    threads = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv else None
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
          f"torch threads: {threads or 'torch default'}")
    if "--skip-conversion" not in sys.argv:
        with tempfile.TemporaryDirectory(prefix="gemma-bench-") as cache:
            c = _run("convert", cache)
        for at, fraction, text in c["progress"]:
            print(f"   {at:5.1f} s  {fraction:4.0%}  {text}")
        print(f"1. first-ever conversion: {c['seconds']:.1f} s (goal ≤ 60 s), "
              f"{c['reports']} progress reports, "
              f"at most {c['longest_gap_s']:.2f} s apart; "
              f"{c['weights_bytes'] / 1e9:.2f} GB weights, {c['tokenizer_bytes'] / 1e6:.1f} MB tokenizer")
    from mha_explorer.core.models.gemma3 import convert

    convert.prepare()  # the user's converted copy, made once if missing, for what follows
    loads = [_run("load", threads=threads) for _ in range(3)]
    each = ", ".join(f"{r['load_s']:.2f}" for r in loads)
    median = statistics.median(r["load_s"] for r in loads)
    print(f"2. warm load: {median:.2f} s median of {each} (goal ≤ 3 s)")
    w = _run("work", threads=threads)
    for T, s in w["maps_s"].items():
        goal = " (goal ≤ 1 s)" if T == 64 else ""
        print(f"3. new {T}-token text -> all 72 maps: {s:.2f} s{goal}")
    for T, ms in w["step_ms"].items():
        goal = " (goal ≤ 150 ms)" if T == 16 else ""
        print(f"4. one generation step after {T} prompt tokens: {ms:.0f} ms median{goal}; "
              f"prefill {w['prefill_s'][T]:.2f} s")
    print(f"5. resident memory after loading: {statistics.median(r['rss_loaded_gb'] for r in loads):.2f} GiB "
          f"(goal ≤ 2 GiB); after the maps and generation: {w['rss_after_gb']:.2f} GiB "
          f"(torch threads {w['threads']})")
    print(f"load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    if "--child" in sys.argv:
        kind = sys.argv[sys.argv.index("--child") + 1]
        if kind == "convert":
            print(json.dumps(child_convert(sys.argv[sys.argv.index("--child") + 2])))
        elif kind == "load":
            print(json.dumps(child_load()))
        else:
            print(json.dumps(child_work()))
    else:
        main()
