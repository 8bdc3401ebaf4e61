"""``mha-explorer decode``: generation with a KV cache, step by step.

Answers from the decode plan alone (no torch): step 0 is the prompt pass, then
one row per generated token with the cache's size and shape, and the step's
FLOPs and bytes. Bad input is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys

from mha_explorer.cli.common import add_config_flags, config_from_args, cpu_only_note, fail, whole_number
from mha_explorer.cli.progress import Progress
from mha_explorer.console import emit
from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.config.presets import get_preset
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import MODELS, model_named
from mha_explorer.core.plan.decode import MAX_STEPS, cache_layout, decode_config, decode_steps
from mha_explorer.core.units import format_bytes, format_count
from mha_explorer.core.variants.registry import family_of

TABLE_HEAD_ROWS = 12  # a long run prints its first and last rows
TABLE_TAIL_ROWS = 6


NAME = "decode"
MAX_LAYERS = 10_000  # the deepest published models have a few hundred; more is a typing slip
CHECK_TOLERANCE = 1e-4  # float32 rows of one layer: a real difference is far larger


def add_layer_flags(p: argparse.ArgumentParser) -> None:
    """--window (unless the common config flags already have it)."""
    with contextlib.suppress(argparse.ArgumentError):  # the shared config flags took it over
        p.add_argument("--window", type=whole_number, metavar="W",
                       help="sliding window: each query sees its last W keys (a rolling cache of W)")


def config_with_window(args: argparse.Namespace) -> MHAConfig:
    cfg = config_from_args(args)
    window = getattr(args, "window", None)
    if window is not None and cfg.window != window:
        cfg = cfg.replace(window=window)
    return cfg


def register(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        NAME, help="generation with a KV cache: the cache and the cost of every step",
        description="Step 0 feeds the prompt's P tokens at once; each of the N steps after it feeds "
        "one token, appends its key and value to the cache [B, Hkv, S_t, d_k] (with latent attention "
        "the latent and RoPE key, [B, S_t, r_kv + d_r]) and scores one row against it. Prints the "
        "cache per layer (and for the model with --layers) and each step's "
        "FLOPs and bytes. Never imports torch.")
    add_config_flags(p, inherit=True)
    add_layer_flags(p)
    p.add_argument("--prompt", type=whole_number, default=8, metavar="P", help="prompt tokens (default 8)")
    p.add_argument("--steps", type=whole_number, default=8, metavar="N",
                   help=f"generated tokens, up to {MAX_STEPS:,} (default 8)")
    p.add_argument("--layers", type=whole_number, metavar="L",
                   help="layers in the model, for the whole model's cache (default: the preset's)")
    p.add_argument("--text", metavar="PROMPT",
                   help="with --weights naming a trained decoder (" + ", ".join(
                       m.key for m in MODELS.values() if m.causal) + "): generate greedily after this "
                   "text with the model's real KV cache, printing each new token, the cache of every "
                   "layer and the step's time; --steps is the number of new tokens")
    p.add_argument("--attention-layer", type=whole_number, metavar="L",
                   help="with --text: also print each new token's attention row per head in layer L")
    p.add_argument("--check", action="store_true",
                   help="also decode with torch and report max_abs_diff_vs_full: the largest "
                   "difference from one full causal pass")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def _layers(args: argparse.Namespace) -> int | None:
    if args.layers is not None:
        if not 1 <= args.layers <= MAX_LAYERS:
            raise ConfigError("layers", f"argument --layers: layers must be from 1 to {MAX_LAYERS:,}, "
                              f"got {args.layers:,}")
        return args.layers
    preset = getattr(args, "preset", None)
    return getattr(get_preset(preset), "layers", None) if preset is not None else None


def decode_report(cfg: MHAConfig, prompt: int, steps: int, layers: int | None) -> dict:
    rows = decode_steps(cfg, prompt, steps, layers)
    layout = cache_layout(cfg)
    return {
        "config": decode_config(cfg, prompt, steps).to_dict(), "variant": cfg.variant,
        "prompt": prompt, "layers": layers,
        "cache": {"tensors": list(layout.names), "dims": list(layout.dims),
                  "bytes_per_token": cfg.batch * layout.elements_per_token * cfg.elem_bytes},
        "steps": [r.to_dict() for r in rows],
        "total_flops": sum(r.flops for r in rows), "total_bytes": sum(r.bytes for r in rows),
        "notes": _notes(cfg),
    }


def _notes(cfg: MHAConfig) -> list[str]:
    return list(family_of(cfg).cache_notes(cfg))


def format_report(d: dict) -> str:
    c = d["config"]
    window = f"  window {c['window']}" if c.get("window") else ""
    lines = [f"Decode — {d['variant']}: D={c['d_model']}  H={c['n_heads']}  B={c['batch']}  "
             f"{c['dtype']}  prompt {d['prompt']}{window}",
             f"cache per token ({' and '.join(d['cache']['tensors'])}, whole batch): "
             f"{format_bytes(d['cache']['bytes_per_token'])} per layer", ""]
    model = d["layers"] is not None
    head = ["step", "new", "S_t", "cache shape", "cache/layer"] + (
        [f"cache×{d['layers']}"] if model else []) + ["FLOPs", "bytes", "FLOPs/byte"]
    table = [head]
    steps = d["steps"]
    shown = steps if len(steps) <= TABLE_HEAD_ROWS + TABLE_TAIL_ROWS else (
        steps[:TABLE_HEAD_ROWS] + [None] + steps[-TABLE_TAIL_ROWS:])
    for s in shown:
        if s is None:
            table.append(["…"] + [""] * (len(head) - 1))
            continue
        table.append([str(s["step"]) + (" (prompt)" if s["step"] == 0 else ""), str(s["new_tokens"]),
                      f"{s['seen_tokens']:,}", "[" + ", ".join(f"{n:,}" for n in s["cache_shape"]) + "]",
                      format_bytes(s["cache_bytes"])]
                     + ([format_bytes(s["model_cache_bytes"])] if model else [])
                     + [format_count(s["flops"]), format_bytes(s["bytes"]), f"{s['flops'] / s['bytes']:.2f}"])
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in table]
    lines += ["", f"total: {format_count(d['total_flops'])} FLOPs, {format_bytes(d['total_bytes'])} moved"]
    lines += [f"note: {n}" for n in d["notes"]]
    if "max_abs_diff_vs_full" in d:
        lines.append(f"max |decoded − full causal pass|: {d['max_abs_diff_vs_full']:.3g}")
    return "\n".join(lines)


def _check(cfg: MHAConfig, prompt: int, steps: int) -> float:
    from mha_explorer.core.engine import decode as decode_engine  # torch: only when asked for

    cpu_only_note(cfg, "the check")
    with Progress(steps + 1, unit="step", label="decoding") as bar:
        run = decode_engine.run_decode(cfg, prompt, steps, progress=bar.fraction)
    return decode_engine.max_abs_diff_vs_full(run)


def _generate(args: argparse.Namespace, model) -> int:
    """A trained decoder's greedy continuation of --text (its report, as JSON or lines)."""
    if not model.causal:
        return fail(f"{model.name} is an encoder: it reads a whole sentence and generates nothing; "
                    "use --weights " + " or ".join(m.key for m in MODELS.values() if m.causal))
    if args.text is None:
        return fail(f"--weights {model.key} generates after a text: give --text PROMPT")
    from mha_explorer.core.plan.memory import default_budget

    try:  # the prompt's pass is checked against the memory budget, as every computing command is
        report = runtime.part(model, "report").decode_report(args.text, args.steps, args.attention_layer,
                                                             budget=default_budget())
    except ConfigError as exc:
        return fail(exc.message)
    if args.json:
        emit(json.dumps(report, indent=2))
    else:
        lines = [f"{model.name}: {report['prompt_tokens']} prompt tokens, {len(report['steps'])} generated",
                 report["text"], ""]
        for s in report["steps"]:
            cache = format_bytes(s["model_cache_bytes"])
            lines.append(f"step {s['step']:>3}  {s['text']!r:<16} cache {cache} "
                         f"(layers: {min(s['cache_tokens'])}–{max(s['cache_tokens'])} tokens)  "
                         f"{1000 * s['seconds']:.0f} ms")
        emit("\n".join(lines))
    return 0


def run(args: argparse.Namespace) -> int:
    model = model_named(getattr(args, "weights", None) or "")
    if model is not None or args.text is not None:
        if model is None:
            return fail("--text generates with a trained decoder: add --weights " + " or ".join(
                m.key for m in MODELS.values() if m.causal))
        return _generate(args, model)
    try:
        cfg = config_with_window(args)
        report = decode_report(cfg, args.prompt, args.steps, _layers(args))
        if args.check:
            report["max_abs_diff_vs_full"] = _check(cfg, args.prompt, args.steps)
    except ConfigError as exc:
        return fail(exc.message)
    if args.check and not report["max_abs_diff_vs_full"] <= CHECK_TOLERANCE:  # NaN fails too
        print(f"mha-explorer: error: the decoded steps differ from one full causal pass by "
              f"{report['max_abs_diff_vs_full']:.3g} (more than {CHECK_TOLERANCE:g})", file=sys.stderr)
        return 1
    emit(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0
