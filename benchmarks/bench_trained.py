"""What the trained heads (all-MiniLM-L6-v2) cost: loading, new maps, memory.

A script that prints figures, not a test:

    python benchmarks/bench_trained.py

Each measurement runs in a fresh child process, so nothing is cached from an
earlier one (the operating system's file cache aside: the first run after a
reboot reads the 91 MB file from disk).

1. Load (goal ≤ 2 s, after torch is imported, as on the worker thread): hash
   check of model.safetensors, reading it with safetensors, the tokenizer.
2. New maps (goal ≤ 150 ms): a new sentence -> one layer's 12 maps, the way the
   engine gets them (the weight source's weights and real input, then the layer's
   scores and softmax), for layers 1 and 6; a new
   sentence -> all 72 maps (the grid); another layer of a computed sentence;
   ``heads_report`` with ablation. Medians over several sentences and lengths.
3. Memory (goal ≤ 300 MB): resident set growth from before loading to after
   loading and running sentences of 12 to 256 word pieces.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ("attention", "lets", "every", "token", "of", "a", "sentence", "look", "at", "the",
         "others", "and", "the", "heads", "each", "learn", "their", "own", "way", "of", "looking")


def _sentence(n_words: int, salt: int) -> str:
    return " ".join(WORDS[(i * 7 + salt) % len(WORDS)] for i in range(n_words))


def maps_of_layer(pieces: tuple[str, ...], layer: int):
    """[H, T, T] numpy maps of one layer from the weight source, as the engine computes them."""
    import torch

    from mha_explorer.core.config import MHAConfig
    from mha_explorer.core.models.minilm.source import Weights as MiniLMWeights

    cfg = MHAConfig(d_model=384, n_heads=12, batch=1, seq=len(pieces), tokens=pieces,
                    weights="minilm-l6", layer=layer)
    source = MiniLMWeights(cfg)
    w = source.weights(cfg, "cpu", torch.float32)
    x, _ = source.inputs(cfg, range(1), "cpu", torch.float32)
    with torch.inference_mode():
        linear = torch.nn.functional.linear
        q = linear(x, w["W_Q"], w["b_Q"]).view(1, -1, 12, 32).transpose(1, 2)  # [1, H, T, d_k]
        k = linear(x, w["W_K"], w["b_K"]).view(1, -1, 12, 32).transpose(1, 2)  # [1, H, T, d_k]
        probs = torch.softmax(q @ k.transpose(-1, -2) / 32 ** 0.5, dim=-1)  # [1, H, T, T]
    return probs[0].numpy()


def child() -> dict:
    import psutil
    import torch

    torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
    proc = psutil.Process()
    rss0 = proc.memory_info().rss
    calls: list[float] = []
    t0 = time.perf_counter()
    from mha_explorer.core.models.minilm.model import load_model
    from mha_explorer.core.models.minilm.tokenizer import load_tokenizer, sentence_pieces

    load_model(progress=calls.append)
    load_tokenizer()
    load_s = time.perf_counter() - t0
    rss_loaded = proc.memory_info().rss

    from mha_explorer.core.models.minilm.report import heads_report, sentence_maps

    sentence_maps(_sentence(8, 99))  # first call pays for one-time set-up in torch
    one_layer: dict[tuple[int, int], list[float]] = {}
    all_layers: dict[int, list[float]] = {}
    for n_words in (10, 60, 250):
        for salt in range(4):
            for layer in (1, 6):  # layer L's maps need layers 1..L-1 run first
                pieces = sentence_pieces(_sentence(n_words, 10 * salt + layer))
                t = time.perf_counter()
                maps_of_layer(pieces, layer)
                one_layer.setdefault((len(pieces), layer), []).append(time.perf_counter() - t)
            t = time.perf_counter()
            found = sentence_maps(_sentence(n_words, 100 + salt))
            all_layers.setdefault(len(found.tokens), []).append(time.perf_counter() - t)
    pieces = sentence_pieces(_sentence(60, 1))
    maps_of_layer(pieces, 6)  # the sentence is now computed; stepping layers reuses it
    layer_times = []
    for layer in range(1, 7):
        t = time.perf_counter()
        maps_of_layer(pieces, layer)
        layer_times.append(time.perf_counter() - t)
    report_times = []
    for salt in range(3):
        t = time.perf_counter()
        heads_report(3, _sentence(20, 10 + salt), ablate=True)
        report_times.append(time.perf_counter() - t)
    return {
        "load_s": load_s, "progress_calls": len(calls), "progress_last": calls[-1] if calls else None,
        "one_layer_ms": [(T, L, 1000 * statistics.median(v)) for (T, L), v in one_layer.items()],
        "all_layers_ms": {T: 1000 * statistics.median(v) for T, v in all_layers.items()},
        "new_layer_ms": 1000 * statistics.median(layer_times),
        "report_ablate_ms": 1000 * statistics.median(report_times),
        "rss_load_mb": (rss_loaded - rss0) / 2**20,
        "rss_total_mb": (proc.memory_info().rss - rss0) / 2**20,
    }


def main() -> None:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True,
                         env=env, cwd=ROOT, check=True)
    wall = time.perf_counter() - t
    r = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"threads: {env.get('OMP_NUM_THREADS', 'torch default')}; child process wall {wall:.1f} s")
    print(f"1. load (hash + safetensors + tokenizer): {r['load_s']:.2f} s (goal ≤ 2 s); "
          f"{r['progress_calls']} progress reports, last {r['progress_last']}")
    for T, layer, ms in r["one_layer_ms"]:
        print(f"2. new sentence, T = {T:>3}, layer {layer}: its 12 maps in {ms:.1f} ms (goal ≤ 150 ms)")
    for T, ms in r["all_layers_ms"].items():
        print(f"   new sentence, T = {T:>3}: all 6 × 12 maps (the grid) in {ms:.1f} ms")
    print(f"   another layer of the same sentence (T = 62): {r['new_layer_ms']:.2f} ms")
    print(f"   heads report with ablation of all 12 heads (T = 22): {r['report_ablate_ms']:.1f} ms")
    print(f"3. resident memory: +{r['rss_load_mb']:.0f} MB after loading, +{r['rss_total_mb']:.0f} MB "
          "after all of the above (goal ≤ 300 MB)")


if __name__ == "__main__":
    if "--child" in sys.argv:
        print(json.dumps(child()))
    else:
        main()
