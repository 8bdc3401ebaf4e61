"""Layouts of the stages around the linear maps: input, project, view and output.

Project and output are drawn as rows of "input × Wᵀ (+ b) = result"; view
keeps Q, K and V exactly where project left them, because a view moves no
data, and only draws the head boundaries on top.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF

from mha_explorer.core.display.value_widths import value_widths
from mha_explorer.core.stages.catalog import StageId
from mha_explorer.qt.stage import diagram_stacked
from mha_explorer.qt.stage import diagram_style as style
from mha_explorer.qt.stage.diagram_compose import (
    Composer,
    StageContext,
    bottom_space,
    chips_row_width,
    left_room,
    text_width,
    top_space,
)
from mha_explorer.qt.stage.diagram_items import BlockItem, GapItem

K_MAX = 24.0  # pixels per log unit: D = 512 is drawn 240 px wide at most
OP_W = 64  # room for "×" or "="
BIAS_PT = 20  # '+ b_Q' between a weight and its '='
ROW_GAP = 16
CAPTIONS = 1.6  # a weight's caption, "W_Qᵀ 512 × 512", may take two lines under a narrow block
NOTE_H = 70  # the sentence at the bottom
SHORT_MARGIN, SHORT_ROW_GAP = 0, 2  # a short pane: three rows barely fit (the view keeps a margin)


def note_h(ctx: StageContext) -> float:
    """Room kept under the rows for the closing sentence; none when it goes beside them."""
    return 0.0 if ctx.note_beside else NOTE_H


def margin_y(ctx: StageContext) -> float:
    """Room above and below the rows: a short pane keeps only a little (the view adds its own)."""
    return SHORT_MARGIN if ctx.note_beside else style.MARGIN


def row_gap(ctx: StageContext) -> float:
    return SHORT_ROW_GAP if ctx.note_beside else ROW_GAP
MIN_SLICE = 16  # head slices thinner than this are summarised with "…"
CHIP_CLEAR = 8  # page kept between a narrow source's width chip and the lines and '×' after it


@dataclass
class Columns:
    """x positions of one 'source × W (+ b) = result' row, shared by every row."""

    k: float
    widen: bool  # blocks as wide as the chip naming their width, where the canvas has room
    x_src: float
    src_right: float  # where the source's room ends: its block, or its width chip when wider
    x_times: float
    x_w: float
    x_bias: float
    x_eq: float
    x_out: float
    right: float


def _dims(ctx: StageContext, *names: str) -> list[tuple[str, int]]:
    return [(n, ctx.plan.dims[n]) for n in names]


def left_width(ctx: StageContext) -> float:
    return left_room(_dims(ctx, "B"), _dims(ctx, "T", "S"))


def _overhang(ctx: StageContext, k: float) -> float:
    """How far the view stage's 'H=8 × d_k=64' label reaches past the right column."""
    dims = ctx.plan.dims
    widest = max(chips_row_width([("H", dims["H"]), ("d_k", dims["d_k"])]),
                 chips_row_width([("Hkv", dims["Hkv"]), ("d_k", dims["d_k"])]))
    narrowest = style.side(min(ctx.config.d_model, ctx.config.kv_dim), k)
    return max(0.0, widest - narrowest)


def source_dim(ctx: StageContext) -> tuple[str, int]:
    """The widest source of a row: X's D, or the merged heads W_O reads (H·d_v under
    latent attention; D under MHA, where both are the model width)."""
    merged = value_widths(ctx.plan).merged
    return merged if merged[1] > ctx.config.d_model else ("D", ctx.config.d_model)


def source_room(dim: tuple[str, int], k: float) -> float:
    """Width a row's source takes: its block, or its width chip (which starts at the block's
    left edge) when a narrow block leaves the chip reaching past it, plus page after it."""
    chip = chips_row_width([dim]) + CHIP_CLEAR
    return max(style.side(dim[1], k), chip)


def stacked(ctx: StageContext) -> bool:
    """Whether the linear stages stand as columns (diagram_stacked): rows on this canvas
    would draw their tensors as icons beside their labels."""
    return not diagram_stacked.fits_as_row(_row_ks(ctx)[0], ctx)


def linear_k(ctx: StageContext) -> float:
    """One scale for every linear stage, so a tensor keeps its size from stage to
    stage; chosen so the busiest of them (project: three rows) fits the canvas."""
    k_w, k_h = _row_ks(ctx)
    return max(min(k_w, k_h, K_MAX), 2.0)


def _row_ks(ctx: StageContext) -> tuple[float, float]:
    """The rows' scale as the canvas's width allows it, and as its height does."""
    cfg = ctx.config
    left = left_width(ctx)
    fixed_w = 2 * style.MARGIN + 2 * left + 2 * OP_W + bias_w(ctx) + _overhang(ctx, 0.0)
    uD, (src, n) = style.units(cfg.d_model), source_dim(ctx)
    unit_w = 2 * uD + style.units(n)
    chip = chips_row_width([(src, n)]) + CHIP_CLEAR
    if (ctx.width - fixed_w) / unit_w * style.units(n) < chip:  # the source's chip sets its room
        fixed_w, unit_w = fixed_w + chip, 2 * uD
    unit_h = max(uD, style.units(cfg.T)) + 2 * max(uD, style.units(cfg.S))
    # captions may take two lines when a block is narrower than its name and shape
    fixed_h = (2 * margin_y(ctx) + 3 * (top_space() + CAPTIONS * bottom_space()) + 2 * row_gap(ctx)
               + note_h(ctx))
    return (ctx.width - fixed_w) / unit_w, (ctx.height - fixed_h) / unit_h


def block_w(dim: tuple[str, int], k: float, widen: bool) -> float:
    """A block's width: its size on the log scale and, ``widen``, no narrower than the chip
    that names it, so the tensor is the thing drawn and not an icon under its label."""
    side = style.side(dim[1], k)
    return max(side, chips_row_width([dim])) if widen else side


def bias_w(ctx: StageContext) -> float:
    """Room for '+ b_Q' between a weight and its '=' (none without biases)."""
    return text_width("+ b_Q", BIAS_PT, True) + 2 * style.GAP if ctx.config.bias else 0.0


def columns(ctx: StageContext, k: float, src: tuple[str, int] | None = None) -> Columns:
    """The row's x positions; ``src``: the source's width dim (D unless said). Blocks are
    widened to their chips when the row still fits the canvas that way."""
    cfg = ctx.config
    left = left_width(ctx)
    room = source_room(src or ("D", cfg.d_model), k)
    bias = bias_w(ctx)
    outs = [("D", cfg.d_model)]  # the weights' column as wide as the widest of them
    if ctx.plan.has_stage(StageId.project):
        kv = ctx.plan.stage(StageId.project).tensor("K")
        outs.append((kv.dims[-1], kv.shape[-1]))
    for widen in (True, False):
        sD = max(block_w(dim, k, widen) for dim in outs)
        width = left + room + OP_W + sD + bias + OP_W + left + sD + _overhang(ctx, k)
        if width <= ctx.width - 2 * style.MARGIN:
            break
    x0 = max(style.MARGIN, (ctx.width - width) / 2) + left
    x_w = x0 + room + OP_W
    return Columns(k, widen, x0, x0 + room, x0 + room + OP_W / 2, x_w, x_w + sD + bias / 2,
                   x_w + sD + bias + OP_W / 2, x_w + sD + bias + OP_W + left,
                   x_w + sD + bias + OP_W + left + sD)


def row_heights(ctx: StageContext, k: float, row_dims: list[str]) -> list[float]:
    sD = style.side(ctx.config.d_model, k)
    return [max(sD, style.side(ctx.plan.dims[d], k)) for d in row_dims]


def row_centres(ctx: StageContext, heights: list[float], captions: float = 1.0) -> list[float]:
    """Vertical centres of rows of these block heights, the group centred above the note;
    ``captions``: the caption's height under each row, in captions of one line."""
    pitch = [top_space() + h + captions * bottom_space() for h in heights]
    total = sum(pitch) + row_gap(ctx) * (len(heights) - 1)
    y = margin_y(ctx) + max(0.0, (ctx.height - note_h(ctx) - 2 * margin_y(ctx) - total) / 2)
    centres = []
    for h, p in zip(heights, pitch, strict=False):
        centres.append(y + top_space() + h / 2)
        y += p + row_gap(ctx)
    return centres


def bottom_note(c: Composer, key: str, text: str) -> None:
    ctx = c.ctx
    c.note(key, text, style.MARGIN, ctx.height - style.MARGIN, ctx.width - 2 * style.MARGIN, "bl")


# input -------------------------------------------------------------------------------
def input_k(ctx: StageContext) -> float:
    """The input stage draws one or two tensors, not three rows: it may draw them larger
    than the shared scale (up to K_MAX), and the move to project shrinks them into place."""
    cfg = ctx.config
    rows = [cfg.T, cfg.S] if cfg.is_cross else [cfg.T]
    fixed_h = (2 * margin_y(ctx) + len(rows) * (top_space() + CAPTIONS * bottom_space()) + row_gap(ctx)
               + note_h(ctx))
    k = min(K_MAX, (ctx.width - 2 * style.MARGIN - 2 * left_width(ctx)) / style.units(cfg.d_model),
            (ctx.height - fixed_h) / sum(style.units(n) for n in rows))
    return max(k, linear_k(ctx))


def build_input(c: Composer) -> None:
    ctx, cfg = c.ctx, c.ctx.config
    k = input_k(ctx)
    stage = ctx.plan.stage(StageId.input)
    sD, sT, sS = (style.side(n, k) for n in (cfg.d_model, cfg.T, cfg.S))
    heights = [sT, sS] if cfg.is_cross else [sT]
    centres = row_centres(ctx, heights)
    x = (ctx.width - sD) / 2
    c.tensor("X", stage.tensor("X"), QRectF(x, centres[0] - sT / 2, sD, sT),
             rows=["T"], cols=["D"], depth=["B"])
    if cfg.is_cross:
        c.tensor("X_kv", stage.tensor("X_kv"), QRectF(x, centres[1] - sS / 2, sD, sS),
                 rows=["S"], cols=["D"], depth=["B"])
    words = f"{cfg.batch:,} sequence{'s' if cfg.batch > 1 else ''} × {cfg.T:,} tokens, " \
            f"each token a vector of {cfg.d_model:,} numbers."
    if cfg.is_cross:
        words += f" Keys and values come from another sequence of {cfg.S:,} tokens."
    bottom_note(c, "note", words)


# project and output ---------------------------------------------------------------------
def _weight_row(c: Composer, col: Columns, cy: float, *, name: str, out_dim: str,
                result_key: str, result_spec, rows_dim: str, origin: str,
                in_dim: tuple[str, int] | None = None) -> None:
    """'× W_nameᵀ (+ b) = result' in one row, centred on cy; ``in_dim``: what the
    weight reads (D unless said: W_O reads H·d_v under latent attention)."""
    ctx, cfg = c.ctx, c.ctx.config
    k = col.k
    (w_in, n_in), n_out = in_dim or ("D", cfg.d_model), ctx.plan.dims[out_dim]
    sIn, sOut = style.side(n_in, k), block_w((out_dim, n_out), k, col.widen)
    sRows = style.side(ctx.plan.dims[rows_dim], k)
    c.operator(f"op.times.{name}", "×", col.x_times, cy)
    c.tensor(f"W_{name}", None, QRectF(col.x_w, cy - sIn / 2, sOut, sIn),
             rows=[w_in], cols=[out_dim], fill=c.ink.weight_fill, show_left=False,
             caption=f"W_{name}ᵀ  {n_in:,} × {n_out:,}", caption_width=sOut + 30,
             sizes={w_in: n_in})
    if cfg.bias:
        bias = c.text(f"op.bias.{name}", f"+ b_{name}", col.x_bias, cy, "c", points=BIAS_PT, bold=True)
        # beside its weight, or (no room there) on a hover: moved, it would misread the formula
        bias.placement, bias.detail = "pin", True
    c.operator(f"op.eq.{name}", "=", col.x_eq, cy)
    c.tensor(result_key, result_spec, QRectF(col.x_out, cy - sRows / 2, sOut, sRows),
             rows=[rows_dim], cols=[out_dim], depth=["B"], fill=c.ink.result_fill, origin=origin)


def project_layout(ctx: StageContext):
    """Block rects of the project stage, shared with the view stage."""
    k = linear_k(ctx)
    col = columns(ctx, k)
    heights = row_heights(ctx, k, ["T", "S", "S"])
    # as linear_k counts them: a narrow weight's caption takes two lines
    return col, row_centres(ctx, heights, CAPTIONS)


def _project_words(ctx: StageContext) -> str:
    cfg = ctx.config
    if cfg.Hkv != cfg.H:
        return (f"{cfg.variant}: K and V are only {cfg.kv_dim:,} wide "
                f"({cfg.Hkv} key/value head{'s' if cfg.Hkv > 1 else ''} × d_k {cfg.d_k}), "
                f"Q is {cfg.d_model:,}.")
    return "Three learned maps of the same tokens: W is stored out × in (nn.Linear), so X·Wᵀ."


def build_project(c: Composer) -> None:
    ctx, cfg = c.ctx, c.ctx.config
    if stacked(ctx):
        diagram_stacked.build_project(c, _project_words(ctx))
        return
    stage = ctx.plan.stage(StageId.project)
    col, centres = project_layout(ctx)
    k = col.k
    sD = block_w(("D", cfg.d_model), k, col.widen)
    sT, sS = style.side(cfg.T, k), style.side(cfg.S, k)
    kv_dim = stage.tensor("K").dims[-1]
    sources = [("X", "T", sT, sum(centres) / 3 if not cfg.is_cross else centres[0])]
    if cfg.is_cross:
        sources.append(("X_kv", "S", sS, (centres[1] + centres[2]) / 2))
    feeds = {"X": [0, 1, 2] if not cfg.is_cross else [0], "X_kv": [1, 2]}
    for key, rows_dim, h, cy in sources:
        # the caption and the lines to the rows stay right of the block's width chip
        c.tensor(key, ctx.plan.stage(StageId.input).tensor(key), QRectF(col.x_src, cy - h / 2, sD, h),
                 rows=[rows_dim], cols=["D"], depth=["B"], caption_width=col.src_right - col.x_src + 4,
                 caption_room=(col.x_src - left_width(ctx) + style.GAP, col.src_right + 4))
        start = [QPointF(col.x_src + sD + 12, cy)]
        if col.src_right > col.x_src + sD:  # level with the block until past its chip
            start.append(QPointF(col.src_right + 12, cy))
        for row in feeds[key]:
            c.line(f"feed.{key}.{row}", [*start, QPointF(col.x_times - 16, centres[row])])
    kv_src = "X_kv" if cfg.is_cross else "X"
    for row, (name, out_dim, rows_dim, src) in enumerate(
            [("Q", "D", "T", "X"), ("K", kv_dim, "S", kv_src), ("V", kv_dim, "S", kv_src)]):
        _weight_row(c, col, centres[row], name=name, out_dim=out_dim, result_key=name,
                    result_spec=stage.tensor(name), rows_dim=rows_dim, origin=src)
    bottom_note(c, "note", _project_words(ctx))


def _left_of_times(col: Columns) -> float:
    """Where the '×' between the merged block and W_O begins: a caption stops before it."""
    return col.x_times - text_width("×", style.OPERATOR_PT, False) / 2 - 10  # and its item margin


def _output_words(ctx: StageContext) -> str:
    cfg = ctx.config
    merged = value_widths(ctx.plan).merged
    back = f"Back to [B, T, D] = {style.shape_text((cfg.batch, cfg.T, cfg.d_model))}"
    if merged[0] != "D":  # the heads' values are not D wide: W_O also changes the width
        back = (f"W_O maps the {cfg.H:,} heads' {merged[1]:,} values per token back to "
                f"D = {cfg.d_model:,}. {back}")
    return f"{back}: the same shape as the input, ready for the next layer."


def build_output(c: Composer) -> None:
    ctx, cfg = c.ctx, c.ctx.config
    if stacked(ctx):
        diagram_stacked.build_output(c, _output_words(ctx))
        return
    k = linear_k(ctx)
    merged = value_widths(ctx.plan).merged  # D, or H·d_v under latent attention
    col = columns(ctx, k, merged)
    sM, sT = block_w(merged, k, col.widen), style.side(cfg.T, k)
    cy = row_centres(ctx, [max(sM, sT)])[0]  # W_O is as tall as what it reads
    c.tensor("merged", ctx.plan.stage(StageId.merge).tensor("merged"), QRectF(col.x_src, cy - sT / 2, sM, sT),
             rows=["T"], cols=[merged[0]], depth=["B"], caption_width=col.src_right - col.x_src + OP_W - 20,
             caption_room=(col.x_src - left_width(ctx) + style.GAP, _left_of_times(col)),
             sizes=dict([merged]))
    _weight_row(c, col, cy, name="O", out_dim="D", result_key="Y", in_dim=merged,
                result_spec=ctx.plan.stage(StageId.output).tensor("Y"), rows_dim="T", origin="merged")
    bottom_note(c, "note", _output_words(ctx))


# view ------------------------------------------------------------------------------------
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
