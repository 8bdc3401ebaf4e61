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
from mha_explorer.core.plan import Plan, build_plan
from mha_explorer.core.presets import PRESETS
from mha_explorer.core.tables import SHAPE_COLUMNS, shape_table
from mha_explorer.core.units import format_bytes, format_count

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
    lines = ["Parameters (one attention layer)"]
    for t in p["terms"]:
        lines.append(f"  {t['name']:<4} = {t['formula']:<14} = {t['numbers']:<16} = {t['count']:>16,}")
    lines.append(f"  total = {p['total_formula']} = {p['total']:,}")
    lines.append(f"  one head (H = 1) at d_model {c.d_model}: {p['single_head_total']:,}"
                 + ("  — the same: heads split D, they do not add parameters"
                    if p["single_head_total"] == p["mha_total"] == p["total"] else ""))
    if c.Hkv != c.H:
        lines.append(f"  full MHA (Hkv = H = {c.H}): {p['mha_total']:,}; {c.variant} saves "
                     f"{p['mha_total'] - p['total']:,}")
    return lines


def _memory_lines(plan: Plan) -> list[str]:
    c, m = plan.config, plan.memory
    return [
        "Memory",
        f"  KV cache per token: 2 × Hkv × d_k × {c.elem_bytes} B = {format_bytes(m.kv_cache_per_token)}",
        f"  KV cache per sequence (S = {c.S:,}): {format_bytes(m.kv_cache_per_sequence)};"
        f" for the batch: {format_bytes(m.kv_cache_batch)}",
        f"  attention matrix B·H·T·S: {format_bytes(m.attention_matrix)} (grows with T·S)",
        f"  total FLOPs: {format_count(plan.total_flops)}",
    ]


def format_plan(plan: Plan) -> str:
    c = plan.config
    title = (f"MHA Explorer — {c.variant}: D={c.d_model}  H={c.H}  Hkv={c.Hkv}  d_k={c.d_k}  "
             f"B={c.batch}  T={c.T}  S={c.S}  {c.dtype}"
             + ("  causal" if c.causal else "") + ("  bias" if c.bias else "  no bias")
             + (f"  weights {c.weights}, layer {c.layer}" if c.weights != "random" else ""))
    return "\n".join([title, "", *shapes_lines(plan), "", *_param_lines(plan), "",
                      *_memory_lines(plan)])


def list_presets() -> str:
    from mha_explorer.core.plan import param_plan

    width = max(len(k) for k in PRESETS)
    out = []
    for key, p in PRESETS.items():
        total = param_plan(p.apply(MHAConfig())).total
        out.append(f"{key:<{width}}  {p.name:<22} D={p.d_model:<6} H={p.n_heads:<3} "
                   f"Hkv={p.n_kv_heads:<3} bias={'yes' if p.bias else 'no ':<3}  "
                   f"{total:>13,} attention parameters per layer")
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    if args.list_presets:
        emit(list_presets())
        return 0
    plan = build_plan(config_from_args(args))
    emit(json.dumps(plan.to_dict(), indent=2) if args.json else format_plan(plan))
    return 0
