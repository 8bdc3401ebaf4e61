"""The view stage's layout: Q, K and V kept exactly where project left them, because a view
moves no data, with the head boundaries drawn on top (h0, h1, …, coloured by key/value group
when query heads share one, and a '…' for the heads too thin to draw). The places are
project's (diagram_linear.py); what is new here is the slicing into heads and the words
that say the memory is only read differently.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF

from mha_explorer.core.stages.catalog import StageId
from mha_explorer.qt.stage import diagram_stacked
from mha_explorer.qt.stage import diagram_style as style
from mha_explorer.qt.stage.diagram_compose import Composer, StageContext
from mha_explorer.qt.stage.diagram_items import BlockItem, GapItem
from mha_explorer.qt.stage.diagram_linear import block_w, bottom_note, left_width, project_layout, stacked

MIN_SLICE = 16  # head slices thinner than this are summarised with "…"


def head_slices(count: int, width: float) -> list[tuple[int | None, float, float]]:
    """(head, x offset, width) of the slices drawn across a block of this width;
    head None is the '…' gap standing for the heads not drawn."""
    if count * MIN_SLICE <= width or count <= style.MAX_HEADS_SHOWN:
        w = width / count
        return [(i, i * w, w) for i in range(count)]
    w = width / 7  # three slices, a gap three slices wide, the last slice
    return [(0, 0, w), (1, w, w), (2, 2 * w, w), (None, 3 * w, 3 * w), (count - 1, 6 * w, w)]


def slice_items(c: Composer, key: str, rect: QRectF, count: int, *, grouped_by: int | None) -> None:
    """Head boundaries drawn over a block: h0, h1, … (coloured by key/value group
    when ``grouped_by`` query heads share one)."""
    for head, x, w in head_slices(count, rect.width()):
        if head is None:  # the heads' chip above says how many there are
            c.add(GapItem(f"{key}.more", w, rect.height(), ink=c.ink), rect.x() + x, rect.y())
            continue
        group = None if grouped_by is None else head // grouped_by
        tint = c.ink.slice_tints[head % 2]
        # the key/value group shows in the outline; the tag stays in ink, readable on any tint
        item = BlockItem(f"{key}.h{head}", w, rect.height(), fill=tint, top=style.dim_qcolor("d_k"),
                         tag=f"h{head}", ink=c.ink, part=True,
                         outline=style.group_color(group) if group is not None else c.ink.muted)
        c.add(item, rect.x() + x, rect.y())


VIEW_NOTE = "view() only changes the shape: every number stays where it was in memory."


def _view_words(ctx: StageContext) -> str:
    cfg = ctx.config
    stage, before = ctx.plan.stage(StageId.view), ctx.plan.stage(StageId.project)
    q0, q1 = before.tensor("Q").shape, stage.tensor("Q").shape
    k0, k1 = before.tensor("K").shape, stage.tensor("K").shape
    return "<br>".join([
        "<b>No data moves.</b>",
        f"The same memory is read as {cfg.H} heads of d_k = {cfg.d_k}.",
        "",
        f"Q&nbsp;&nbsp;&nbsp;{style.shape_text(q0)}&nbsp;&nbsp;→&nbsp;&nbsp;{style.shape_text(q1)}",
        f"K, V&nbsp;&nbsp;&nbsp;{style.shape_text(k0)}&nbsp;&nbsp;→&nbsp;&nbsp;{style.shape_text(k1)}",
    ])


def _view_slices(c: Composer, name: str, rect: QRectF) -> None:
    cfg = c.ctx.config
    shared = cfg.Hkv != cfg.H
    if name == "Q":
        slice_items(c, name, rect, cfg.H, grouped_by=cfg.group_size if shared else None)
    else:
        slice_items(c, name, rect, cfg.Hkv, grouped_by=1 if shared else None)


def build_view(c: Composer) -> None:
    ctx = c.ctx
    if stacked(ctx):
        diagram_stacked.build_view(c, VIEW_NOTE, _view_words(ctx), _view_slices)
        return
    stage, before = ctx.plan.stage(StageId.view), ctx.plan.stage(StageId.project)
    col, centres = project_layout(ctx)
    k = col.k
    kv_heads = "Hkv"
    for row, (name, rows_dim, heads_dim) in enumerate(
            [("Q", "T", "H"), ("K", "S", kv_heads), ("V", "S", kv_heads)]):
        spec = stage.tensor(name)
        flat = before.tensor(name)
        w = block_w((flat.dims[-1], flat.shape[-1]), k, col.widen)
        h = style.side(ctx.plan.dims[rows_dim], k)
        rect = QRectF(col.x_out, centres[row] - h / 2, w, h)
        c.tensor(name, spec, rect, rows=[rows_dim], cols=[heads_dim, "d_k"], depth=["B"],
                 fill=c.ink.result_fill)
        _view_slices(c, name, rect)
    left_room = col.x_out - left_width(ctx) - 2 * style.MARGIN
    c.note("view.words", _view_words(ctx), style.MARGIN, sum(centres) / 3, left_room, "cl",
           points=20, html=True)
    bottom_note(c, "note", VIEW_NOTE)
