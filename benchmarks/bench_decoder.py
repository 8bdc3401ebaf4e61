"""What a trained decoder costs: conversion, loading, maps, generation, memory.

A script that prints figures, not a test:

    python benchmarks/bench_decoder.py [--model gemma3-270m|smollm2-135m] [--threads N]
                                       [--skip-conversion]

Each measurement runs in a fresh child process, so nothing is cached in memory from
an earlier one (the operating system's file cache aside). The goals are each model's own
(GOALS: Gemma 3 270M's first, then SmolLM2-135M's).

1. First-ever conversion (with progress shown): the GGUF file hashed, dequantised and
   written to a fresh temporary cache folder, the tokenizer built; about one progress text
   a second is printed, and the longest wait between two.
2. Warm load (after torch is imported, as on a worker thread): the converted copy read,
   its SHA-256 checked, the tokenizer read. Median of 3 children.
3. A new 64-token text -> all layers × heads maps (on 2 cores), median over texts; and a
   512-token text for scale.
4. One generation step with the KV cache: median over 16 steps after a 16-token prompt and
   after a 600-token one (a sliding-window layer's cache full).
5. Resident memory after loading, and after the work above.

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
# (conversion s, warm load s, 64-token maps s, one step ms, resident GiB) each model should stay under
GOALS = {"gemma3-270m": (60, 3, 1, 150, 2), "smollm2-135m": (30, 2, 1, 100, 1.5)}
WORDS = ("attention", "lets", "every", "token", "of", "a", "text", "look", "at", "the", "others", "and",
         "the", "heads", "each", "learn", "their", "own", "way", "of", "looking", "back")


def _text(n_words: int, salt: int) -> str:
    return " ".join(WORDS[(i * 7 + salt) % len(WORDS)] for i in range(n_words))


def _text_of_tokens(tokenizer, n_tokens: int, salt: int) -> list[int]:
    """Token ids of a made-up text cut to exactly ``n_tokens`` (a first token included)."""
    ids, _ = tokenizer.encode(_text(n_tokens, salt))
    return ids[:n_tokens]


def _threads() -> None:
    import torch

    wanted = os.environ.get("BENCH_THREADS")
    if wanted:
        torch.set_num_threads(int(wanted))


def _kit(key: str):
    from mha_explorer.core.models.catalog import MODELS
    from mha_explorer.core.models.decoder.kit import kit_for

    return kit_for(MODELS[key])


def child_convert(key: str, cache: str) -> dict:
    os.environ["MHA_EXPLORER_CACHE_DIR"] = cache
    texts: list[tuple[float, float, str]] = []
    t0 = time.perf_counter()

    def progress(fraction: float, text: str) -> None:
        texts.append((time.perf_counter() - t0, fraction, text))

    found = _kit(key).conversion.prepare(progress)
    shown = [entry for i, entry in enumerate(texts)  # about one line a second, and the last
             if i == len(texts) - 1 or int(entry[0]) != int(texts[i + 1][0])]
    gaps = [b[0] - a[0] for a, b in zip(texts, texts[1:], strict=False)]
    return {"seconds": time.perf_counter() - t0, "progress": shown, "reports": len(texts),
            "longest_gap_s": max(gaps, default=0.0), "weights_bytes": found.weights_bytes,
            "tokenizer_bytes": found.tokenizer_bytes}


def child_load(key: str) -> dict:
    import psutil
    import torch  # noqa: F401 - imported before the clock starts, as on the worker thread

    _threads()
    proc = psutil.Process()
    rss0 = proc.memory_info().rss
    kit = _kit(key)
    kit.files  # noqa: B018 - the package's module, imported before the clock starts

    t = time.perf_counter()
    kit.load_model()
    return {"load_s": time.perf_counter() - t, "rss_loaded_gb": proc.memory_info().rss / 2**30,
            "rss_growth_gb": (proc.memory_info().rss - rss0) / 2**30}


def child_work(key: str) -> dict:
    import psutil
    import torch

    _threads()
    from mha_explorer.core.models.decoder.generate import generate

    model = _kit(key).load_model()
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
    key = sys.argv[sys.argv.index("--model") + 1] if "--model" in sys.argv else "gemma3-270m"
    threads = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv else None
    conversion_goal, load_goal, maps_goal, step_goal, memory_goal = GOALS[key]
    d = _kit(key).description
    print(f"{d.name}: load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
          f"torch threads: {threads or 'torch default'}")
    if "--skip-conversion" not in sys.argv:
        with tempfile.TemporaryDirectory(prefix="decoder-bench-") as cache:
            c = _run("convert", key, cache)
        for at, fraction, text in c["progress"]:
            print(f"   {at:5.1f} s  {fraction:4.0%}  {text}")
        print(f"1. first-ever conversion: {c['seconds']:.1f} s (goal ≤ {conversion_goal} s), "
              f"{c['reports']} progress reports, "
              f"at most {c['longest_gap_s']:.2f} s apart; "
              f"{c['weights_bytes'] / 1e9:.2f} GB weights, {c['tokenizer_bytes'] / 1e6:.1f} MB tokenizer")
    _kit(key).conversion.prepare()  # the user's converted copy, made once if missing, for what follows
    loads = [_run("load", key, threads=threads) for _ in range(3)]
    each = ", ".join(f"{r['load_s']:.2f}" for r in loads)
    median = statistics.median(r["load_s"] for r in loads)
    print(f"2. warm load: {median:.2f} s median of {each} (goal ≤ {load_goal} s)")
    w = _run("work", key, threads=threads)
    for T, s in w["maps_s"].items():
        goal = f" (goal ≤ {maps_goal} s)" if T == 64 else ""
        print(f"3. new {T}-token text -> all {d.layers * d.heads} maps: {s:.2f} s{goal}")
    for T, ms in w["step_ms"].items():
        goal = f" (goal ≤ {step_goal} ms)" if T == 16 else ""
        print(f"4. one generation step after {T} prompt tokens: {ms:.0f} ms median{goal}; "
              f"prefill {w['prefill_s'][T]:.2f} s")
    print(f"5. resident memory after loading: {statistics.median(r['rss_loaded_gb'] for r in loads):.2f} GiB "
          f"(goal ≤ {memory_goal} GiB); after the maps and generation: {w['rss_after_gb']:.2f} GiB "
          f"(torch threads {w['threads']})")
    print(f"load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    if "--child" in sys.argv:
        kind, key, *rest = sys.argv[sys.argv.index("--child") + 1:]
        if kind == "convert":
            print(json.dumps(child_convert(key, rest[0])))
        elif kind == "load":
            print(json.dumps(child_load(key)))
        else:
            print(json.dumps(child_work(key)))
    else:
        main()
