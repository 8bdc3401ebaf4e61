"""``mha-explorer shapes``: every stage's shapes and the parameter arithmetic, from the
stage plan alone (never imports torch or Qt).

The table's cells are core.tables.shape_table's, the words the window's Shapes
dock shows, so the two never disagree.
"""

from __future__ import annotations

import argparse
import json

from mha_explorer.cli.common import add_config_flags, config_from_args
from mha_explorer.console import emit
from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.presets import PRESETS
from mha_explorer.core.plan.build import Plan, build_plan
from mha_explorer.core.plan.kv_cache import (
    KV_COMPARE_HEADER,
    kv_compare_rows,
    kv_compare_table,
    kv_formula,
    model_layers,
)
from mha_explorer.core.text.tables import SHAPE_COLUMNS, shape_table
from mha_explorer.core.units import format_bytes, format_count
from mha_explorer.core.variants.registry import family_of

NAME = "shapes"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(NAME, help="print every stage's shapes and the parameter arithmetic",
                       description="Print every stage's tensor shapes, strides, FLOPs and "
                       "memory, and the parameter arithmetic. Never imports torch.")
    add_config_flags(p, inherit=True)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--list-presets", action="store_true", help="list the presets and exit")


def shapes_lines(plan: Plan) -> list[str]:
    """The shapes table as aligned text, the cells exactly as the window shows them."""
    rows = [SHAPE_COLUMNS] + [row.texts for row in shape_table(plan)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(SHAPE_COLUMNS))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _param_lines(plan: Plan) -> list[str]:
    c, p = plan.config, plan.to_dict()["params"]
    name_w, formula_w, numbers_w = (max(n, *(len(t[key]) for t in p["terms"]))
                                    for n, key in ((4, "name"), (14, "formula"), (16, "numbers")))
    lines = [f"Parameters (one attention layer: {plan.family.title})"]
    for t in p["terms"]:
        lines.append(f"  {t['name']:<{name_w}} = {t['formula']:<{formula_w}} = {t['numbers']:<{numbers_w}} = "
                     f"{t['count']:>16,}")
    lines.append(f"  total = {p['total_formula']} = {p['total']:,}")
    lines.append(f"  one head (H = 1) at d_model {c.d_model}: {p['single_head_total']:,}"
                 + ("  — the same: heads split D, they do not add parameters"
                    if p["single_head_total"] == p["mha_total"] == p["total"] else ""))
    if p["mha_total"] != p["total"]:
        change = p["mha_total"] - p["total"]
        lines.append(f"  full MHA (Hkv = H = {c.H}) at d_model {c.d_model}: {p['mha_total']:,}; {c.variant} "
                     f"{'saves' if change > 0 else 'adds'} {abs(change):,}")
    return lines


def cache_formula(cfg: MHAConfig) -> str:
    """Bytes cached per token and layer, in symbols and this config's numbers."""
    f = kv_formula(cfg)
    return f"{f.token_symbols} = {f.token_numbers} B"


def _memory_lines(plan: Plan) -> list[str]:
    c, m, f = plan.config, plan.memory, kv_formula(plan.config)
    held = f"{f.tokens_symbols} = {f.tokens_numbers}" if f.tokens_symbols != "S" else f"S = {c.S:,}"
    lines = [
        "Memory",
        f"  KV cache per token: {cache_formula(c)} = {format_bytes(m.kv_cache_per_token)}",
        f"  KV cache per sequence (× {held} tokens): {format_bytes(m.kv_cache_per_sequence)};"
        f" for the batch (× B = {c.batch:,}): {format_bytes(m.kv_cache_batch)}",
        f"  attention matrix B·H·T·S: {format_bytes(m.attention_matrix)} (grows with T·S)",
        f"  total FLOPs: {format_count(plan.total_flops)}",
    ]
    data = plan.to_dict()
    if c.mask_spec.masks_anything:
        mask = data["mask"]
        lines.append(f"  mask: {mask['description']}; {mask['visible']:,} of {mask['cells']:,} cells "
                     f"visible per head; a sparse kernel would skip "
                     f"{format_count(mask['skipped_flops']['total'])} FLOPs")
    summary = plan.family.summary(c)
    if summary is not None:
        lines.append(f"  {plan.family.title} FLOPs: naive {format_count(summary['naive_flops'])}, "
                     f"absorbed {format_count(summary['absorbed_flops'])} (W_UK in the query, "
                     "W_UV in W_O)")
    return lines


def _kv_compare_lines(cfg: MHAConfig, layers: int) -> list[str]:
    rows = [KV_COMPARE_HEADER] + [tuple(_cell(v) for v in row) for row in kv_compare_table(cfg, layers)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(KV_COMPARE_HEADER))]
    title = f"KV cache by variant (D={cfg.d_model}, H={cfg.H}, S={cfg.S:,}, B={cfg.batch}, {cfg.dtype}"
    title += f", {layers} layers)" if layers > 1 else ", one layer)"
    return [title] + ["  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
                      for r in rows]


def _cell(value) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def preset_layers(args: argparse.Namespace, cfg: MHAConfig) -> int:
    """The named preset's layer count (for whole-model figures), else the trained model's or
    the matching preset's (model_layers), else one layer."""
    key = getattr(args, "preset", None)
    return PRESETS[key].layers if key in PRESETS else model_layers(cfg)


def format_plan(plan: Plan, layers: int = 1) -> str:
    c = plan.config
    extra = plan.family.dims(c)
    sizes = "  ".join(f"{symbol}={value}" for symbol, value in extra.items()) if extra else \
        f"Hkv={c.Hkv}  d_k={c.d_k}"
    shape = f"D={c.d_model}  H={c.H}  {sizes}"
    title = (f"MHA Explorer — {c.variant}: {shape}  B={c.batch}  T={c.T}  S={c.S}  {c.dtype}"
             + ("  causal" if c.causal else "") + ("  bias" if c.bias else "  no bias")
             + (f"  positions {c.positions}" if c.positions != "none" else "")
             + (f"  weights {c.weights}, layer {c.layer}" if c.weights != "random" else ""))
    return "\n".join([title, "", *shapes_lines(plan), "", *_param_lines(plan), "",
                      *_memory_lines(plan), "", *_kv_compare_lines(c, layers)])


def compare_json(cfg: MHAConfig, layers: int) -> list[dict]:
    rows = kv_compare_rows(cfg, layers)
    return [{"variant": r.variant, "setting": r.setting, "formula": r.formula, "current": r.current,
             "bytes_per_token": r.per_token, "tokens_cached": r.tokens, "bytes_per_sequence": r.per_sequence,
             "bytes_per_batch": r.per_batch, "whole_model_bytes": r.whole_model,
             "vs_mha": r.ratio(rows[0])} for r in rows]


def list_presets() -> str:
    width = max(len(k) for k in PRESETS)
    out = []
    for key, p in PRESETS.items():
        cfg = p.apply(MHAConfig())
        family = family_of(cfg)
        total = family.params(cfg).total
        kv = cfg.variant if family.switch else f"Hkv={p.n_kv_heads:<3}"
        cache = kv_formula(cfg).per_token
        out.append(f"{key:<{width}}  {p.name:<38} D={p.d_model:<6} H={p.n_heads:<3} {kv:<7} "
                   f"bias={'yes' if p.bias else 'no ':<3}  {total:>13,} attention parameters per layer, "
                   f"KV cache {cache:>6,} B per token and layer ({cache_formula(cfg).split(' = ')[-1]})")
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    if args.list_presets:
        emit(list_presets())
        return 0
    cfg = config_from_args(args)
    plan, layers = build_plan(cfg), preset_layers(args, cfg)
    if args.json:
        data = plan.to_dict()
        data["kv_compare"] = compare_json(cfg, layers)
        data["layers"] = layers
        emit(json.dumps(data, indent=2))
    else:
        emit(format_plan(plan, layers))
    return 0
