"""The shapes and parameter tables as rows, CSV and Markdown, for notes and slides.

Numbers stay raw integers in CSV (a spreadsheet can sum them) and are grouped
with thousands separators in Markdown (a person reads them).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from mha_explorer.core.plan import Plan

SHAPE_HEADER = ("stage", "tensor", "dims", "shape", "strides", "contiguous", "allocates",
                "bytes", "stage_flops", "stage_bytes")
PARAM_HEADER = ("parameter", "formula", "numbers", "count")


def shape_rows(plan: Plan) -> list[tuple]:
    rows = []
    for stage in plan.stages:
        for t in stage.tensors:
            rows.append((stage.id, t.name, " × ".join(t.dims), " × ".join(map(str, t.shape)),
                         " × ".join(map(str, t.strides)), t.contiguous, t.allocates, t.nbytes,
                         stage.flops, stage.bytes))
    return rows


def param_rows(plan: Plan) -> list[tuple]:
    p = plan.params
    rows = [(t.name, t.formula, t.numbers, t.count) for t in p.terms]
    rows.append(("total", p.total_formula, "", p.total))
    rows.append(("one head (H = 1), same D", "", "", p.single_head_total))
    if plan.config.Hkv != plan.config.H:
        rows.append(("full MHA (Hkv = H)", "", "", p.mha_total))
    m = plan.memory
    rows += [
        ("KV cache per token (bytes)", "2 × Hkv × d_k × bytes", "", m.kv_cache_per_token),
        ("KV cache per sequence (bytes)", "× S", "", m.kv_cache_per_sequence),
        ("KV cache for the batch (bytes)", "× S × B", "", m.kv_cache_batch),
        ("attention matrix (bytes)", "B × H × T × S × bytes", "", m.attention_matrix),
    ]
    return rows


def to_csv(header: tuple, rows: list[tuple]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def _md_cell(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value).replace("|", "\\|")


def to_markdown(header: tuple, rows: list[tuple]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def write_tables(plan: Plan, folder) -> list[str]:
    """shapes.csv, shapes.md, params.csv, params.md in ``folder``; returns the names.
    OSError (naming the file) when one cannot be written; earlier ones stay whole."""
    from mha_explorer.core import safe_files
    from mha_explorer.core.interrupts import checkpoint

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "shapes.csv": to_csv(SHAPE_HEADER, shape_rows(plan)),
        "shapes.md": to_markdown(SHAPE_HEADER, shape_rows(plan)),
        "params.csv": to_csv(PARAM_HEADER, param_rows(plan)),
        "params.md": to_markdown(PARAM_HEADER, param_rows(plan)),
    }
    for name, text in files.items():
        checkpoint()  # Ctrl+C acts between whole files
        safe_files.write_text(folder / name, text)  # whole or not at all, never through a link
    return list(files)
