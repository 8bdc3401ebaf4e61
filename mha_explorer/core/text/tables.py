"""The shapes and parameter tables: the words a person reads, and rows for CSV and Markdown.

``shape_table`` is the one source of every cell's text in the shapes table: the
window's Shapes dock and ``mha-explorer shapes`` both print it, so they say the
same words for every row. Numbers stay raw integers in CSV (a spreadsheet can
sum them) and are grouped with thousands separators in Markdown (a person reads them).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from mha_explorer.core.plan.build import Plan
from mha_explorer.core.stages.catalog import STAGES, label
from mha_explorer.core.units import format_bytes, format_count

# Short names of the stages, as the stage buttons and the tables show them (the catalog's).
STAGE_LABELS = {stage: d.label for stage, d in STAGES.items()}
SHAPE_COLUMNS = ("Stage", "Tensor", "Dims", "Shape", "Strides", "Contiguous", "FLOPs", "New memory")

SHAPE_HEADER = ("stage", "tensor", "dims", "shape", "strides", "contiguous", "allocates",
                "bytes", "stage_flops", "stage_bytes")
PARAM_HEADER = ("parameter", "formula", "numbers", "count")


@dataclass(frozen=True)
class ShapeRow:
    """One tensor of one stage, every cell's text (in SHAPE_COLUMNS order) prepared."""

    stage_index: int
    first_in_stage: bool
    dims: tuple[str, ...]
    sizes: tuple[str, ...]  # each dim's size, grouped with thousands separators
    texts: tuple[str, ...]
    tooltips: tuple[str, ...]
    memory_fraction: float  # of the largest newly allocated tensor; 0 for a view
    quadratic: bool  # grows with T·S: the attention matrix


def stage_label(index: int, stage_id: str) -> str:
    """'5 QKᵀ': the stage's number and short name."""
    return f"{index + 1} {label(stage_id)}"


def is_attention_matrix(dims: tuple[str, ...]) -> bool:
    return "T" in dims and "S" in dims


def _memory(t, quadratic: bool) -> tuple[str, str]:
    if not t.allocates:
        return "view, no copy", "shares storage with the tensor before it"
    text = format_bytes(t.nbytes) + ("  ∝ T·S" if quadratic else "")
    tip = f"{t.nbytes:,} bytes newly allocated"
    if quadratic:
        tip += " — grows with T × S: the quadratic term of attention"
    return text, tip


def shape_table(plan: Plan) -> list[ShapeRow]:
    """One row per tensor per stage: the shapes table as a person reads it."""
    largest = max((t.nbytes for s in plan.stages for t in s.tensors if t.allocates), default=1)
    rows = []
    for i, stage in enumerate(plan.stages):
        stage_tip = "<br>".join([f"<b>{i + 1}. {stage.title}</b>", stage.formula,
                                 stage.explanation, *stage.notes])
        for j, t in enumerate(stage.tensors):
            first, quadratic = j == 0, is_attention_matrix(t.dims)
            sizes = tuple(f"{s:,}" for s in t.shape)
            memory, memory_tip = _memory(t, quadratic)
            texts = (
                stage_label(i, stage.id) if first else "",
                t.name,
                ", ".join(t.dims),
                " × ".join(sizes),
                "(" + ", ".join(f"{s:,}" for s in t.strides) + ")",
                ("yes" if t.contiguous else "no") + ("" if t.allocates else " (view)"),
                format_count(stage.flops) if first else "",
                memory,
            )
            tooltips = (
                stage_tip, f"{t.name} after “{stage.title}”",
                "named dims: " + " × ".join(t.dims),
                " × ".join(f"{d}={s}" for d, s in zip(t.dims, sizes, strict=True))
                + f" = {t.numel:,} elements",
                "elements to skip for one step along each dim",
                "contiguous: the strides are those of a fresh tensor of this shape"
                if t.contiguous
                else "not contiguous: the strides are permuted, the data was not moved",
                f"{stage.flops:,} floating-point operations in this stage" if first else "",
                memory_tip,
            )
            rows.append(ShapeRow(i, first, t.dims, sizes, texts, tooltips,
                                 t.nbytes / largest if t.allocates else 0.0, quadratic))
    return rows


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
    from mha_explorer.core.system import safe_files
    from mha_explorer.core.system.interrupts import checkpoint

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
