"""The linear stages on a narrow canvas (a projector's pane beside the heads, where the type is
large): the source stands over its rows instead of left of them.

A row 'source × Wᵀ (+ b) = result' with every chip is about 25 of its type's ems wide: on a
narrow pane it left each tensor an icon under its labels. Here the source (X; merged at the
output) is drawn once on top, a line carries it down the left to each row's '×', and each row
'× Wᵀ (+ b) = result' has the width the source column took. The rows read as the formula
does; the tensors take the pane's height. View reads Q, K and V as heads where project left
them, its words where X was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF

from mha_explorer.core.display.value_widths import value_widths
from mha_explorer.core.stages.catalog import StageId
from mha_explorer.qt.stage import diagram_style as style
from mha_explorer.qt.stage.diagram_compose import (
    Composer,
    StageContext,
    bottom_space,
    chips_row_width,
    left_room,
    note_height,
    text_width,
    top_space,
)

K_MAX = 24.0  # as the rows' scale: D = 512 is drawn 240 px wide at most
OP_EMS = 1.8  # room for '×' or '=', in ems of the operators' type
BIAS_PT = 20
FEED_H = 18  # the line from the source down to the rows
ROW_GAP = 10
ROW_K_LEAST = 3.0  # rows beside their source below this scale draw icons beside their labels
STACK_ASPECT = 0.75  # a canvas at least this tall for its width may put the source on top


@dataclass(frozen=True)
class Row:
    """One 'Wᵀ (+ b) = result' row: the weight's input and output dims, the result's rows."""

    name: str
    w_in: tuple[str, int]
    out: tuple[str, int]
    rows: str
    result: str = ""  # the result's key: the name (Q, K, V) unless said (Y)

    @property
    def key(self) -> str:
        return self.result or self.name


@dataclass(frozen=True)
class Stack:
    """The scale, the source's rect, each row's centre and the rows' x positions."""

    k: float
    op_w: float  # room for a '×' or '='
    bias_w: float
    source: QRectF
    centres: tuple[float, ...]
    x_times: float
    x_w: float
    x_eq: float
    x_out: float
    spine: float  # the x of the line that carries the source to the rows


def fits_as_row(row_k: float, ctx: StageContext) -> bool:
    """Whether rows beside their source draw their tensors as tensors: their scale above the
    least, or a canvas too short to put the source on top."""
    return row_k > ROW_K_LEAST or ctx.height < STACK_ASPECT * ctx.width


def _em(points: float) -> float:
    return max(points, style.type_floor()) * 96 / 72


def _op_w(ems: float = OP_EMS) -> float:
    return ems * _em(style.OPERATOR_PT)


def _caption_h(lines: int) -> float:
    return lines * (bottom_space() - style.GAP) + style.GAP


def _wide(dim: tuple[str, int], k: float, room: float | None = None) -> float:
    """A block's width: its size on the log scale (within ``room``), never narrower than the
    chip naming it, so the tensor and not its label is the thing drawn."""
    side = style.side(dim[1], k)
    return max(chips_row_width([dim]), side if room is None else min(side, room))


def _bias_w(ctx: StageContext) -> float:
    return text_width("+ b_Q", BIAS_PT, True) + style.GAP if ctx.config.bias else 0.0


def stack(ctx: StageContext, source: tuple[str, int], rows: list[Row], note: str) -> Stack:
    """The scale that fits the source, its rows and the sentence in the canvas's height, and
    the rows' x positions, centred."""
    cfg, dims = ctx.config, ctx.plan.dims
    note_room = note_height(note, ctx.width - 2 * style.MARGIN) + style.GAP
    fixed_h = (2 * style.MARGIN + top_space() + bottom_space() + FEED_H
               + len(rows) * (top_space() + _caption_h(2)) + ROW_GAP * (len(rows) - 1) + note_room)
    unit_h = style.units(cfg.T) + sum(max(style.units(r.w_in[1]), style.units(dims[r.rows])) for r in rows)
    k = max(2.0, min(K_MAX, (ctx.height - fixed_h) / unit_h))
    chip = max(left_room([], [(r.rows, dims[r.rows])]) for r in rows)
    room = ctx.width - 2 * style.MARGIN
    # what gives way on a narrow canvas, in turn: the blocks' log-scale width (never their
    # chips'), the room about the signs, and the biases' place (they go where there is room)
    for out_w, op_w, bias_w in ((max(_wide(r.out, k) for r in rows), _op_w(), _bias_w(ctx)),
                                (max(chips_row_width([r.out]) for r in rows), _op_w(), _bias_w(ctx)),
                                (max(chips_row_width([r.out]) for r in rows), _op_w(1.2), _bias_w(ctx)),
                                (max(chips_row_width([r.out]) for r in rows), _op_w(1.2), 0.0)):
        width = op_w + out_w + bias_w + op_w + chip + out_w
        if width <= room:
            break
    x0 = style.MARGIN + max(0.0, (room - width) / 2)
    x_w = x0 + op_w
    x_out = x_w + out_w + bias_w + op_w + chip
    w_src = _wide(source, k, room - left_room([], [("T", cfg.T)]))
    src = QRectF(style.MARGIN + room / 2 - w_src / 2, style.MARGIN + top_space(), w_src, style.side(cfg.T, k))
    y = src.bottom() + bottom_space() + FEED_H
    centres = []
    for r in rows:
        h = max(style.side(r.w_in[1], k), style.side(dims[r.rows], k))
        centres.append(y + top_space() + h / 2)
        y += top_space() + h + _caption_h(2) + ROW_GAP
    return Stack(k, op_w, bias_w, src, tuple(centres), x0 + op_w / 2, x_w, x_w + out_w + bias_w + op_w / 2,
                 x_out, x0 + 4)


def _feed(c: Composer, key: str, st: Stack) -> None:
    """The source's line: down from it, along the left, into each row's '×'."""
    top = QPointF(st.source.center().x(), st.source.bottom() + bottom_space() + 2)  # under its caption
    turn = QPointF(st.spine, top.y() + FEED_H / 2)
    for i, cy in enumerate(st.centres):
        c.line(f"feed.{key}.{i}", [top, QPointF(top.x(), turn.y()), turn, QPointF(st.spine, cy),
                                   QPointF(st.x_times - _em(style.OPERATOR_PT) / 2, cy)])


def _weight_row(c: Composer, st: Stack, cy: float, row: Row, spec, origin: str) -> QRectF:
    """'× Wᵀ (+ b) = result' centred on ``cy``; returns the result's rect."""
    ctx, cfg, k = c.ctx, c.ctx.config, st.k
    dims = dict(ctx.plan.dims)
    out_w = st.x_eq - st.op_w / 2 - st.bias_w - st.x_w
    c.operator(f"op.times.{row.name}", "×", st.x_times, cy)
    sIn, wW = style.side(row.w_in[1], k), _wide(row.out, k, out_w)
    c.tensor(f"W_{row.name}", None, QRectF(st.x_w, cy - sIn / 2, wW, sIn), rows=[row.w_in[0]],
             cols=[row.out[0]], fill=c.ink.weight_fill, show_left=False,
             caption=f"W_{row.name}ᵀ  {row.w_in[1]:,} × {row.out[1]:,}", caption_width=out_w + st.bias_w,
             sizes=dict([row.w_in, row.out]))
    if cfg.bias:
        bias = c.text(f"op.bias.{row.name}", f"+ b_{row.name}", st.x_w + wW + style.GAP / 2, cy, "cl",
                      points=BIAS_PT, bold=True)
        # beside its weight, or (no room there) on a hover: moved, it would misread the formula
        bias.placement, bias.detail = "pin", True
    c.operator(f"op.eq.{row.name}", "=", st.x_eq, cy)
    h = style.side(dims[row.rows], k)
    rect = QRectF(st.x_out, cy - h / 2, _wide(row.out, k, ctx.width - style.MARGIN - st.x_out), h)
    c.tensor(row.key, spec, rect, rows=[row.rows], cols=[row.out[0]], depth=["B"],
             fill=c.ink.result_fill, origin=origin, sizes=dict([row.out]))
    return rect


def _qkv(ctx: StageContext) -> list[Row]:
    cfg = ctx.config
    kv = ctx.plan.stage(StageId.project).tensor("K")
    d = ("D", cfg.d_model)
    return [Row("Q", d, d, "T"), Row("K", d, (kv.dims[-1], kv.shape[-1]), "S"),
            Row("V", d, (kv.dims[-1], kv.shape[-1]), "S")]


def _note(c: Composer, text: str) -> None:
    ctx = c.ctx
    c.note("note", text, style.MARGIN, ctx.height - style.MARGIN, ctx.width - 2 * style.MARGIN, "bl")


def build_project(c: Composer, note: str) -> None:
    ctx, cfg = c.ctx, c.ctx.config
    rows = _qkv(ctx)
    st = stack(ctx, ("D", cfg.d_model), rows, note)
    stage = ctx.plan.stage(StageId.project)
    c.tensor("X", ctx.plan.stage(StageId.input).tensor("X"), st.source, rows=["T"], cols=["D"],
             depth=["B"])
    _feed(c, "X", st)
    for row, cy in zip(rows, st.centres, strict=True):
        _weight_row(c, st, cy, row, stage.tensor(row.name), "X")
    _note(c, note)


def build_view(c: Composer, note: str, words: str,
               slices: Callable[[Composer, str, QRectF], None]) -> None:
    """Q, K and V where the project stage left them, read as heads; ``words`` (what the view
    changes) where X was; ``slices(c, name, rect)`` draws a tensor's heads."""
    ctx, cfg = c.ctx, c.ctx.config
    rows = _qkv(ctx)
    st = stack(ctx, ("D", cfg.d_model), rows, note)
    stage = ctx.plan.stage(StageId.view)
    for row, cy in zip(rows, st.centres, strict=True):
        spec = stage.tensor(row.name)
        h = style.side(ctx.plan.dims[row.rows], st.k)
        rect = QRectF(st.x_out, cy - h / 2, _wide(row.out, st.k, ctx.width - style.MARGIN - st.x_out), h)
        # 'H=8' over 'd_k=64': side by side they would reach past the block
        c.tensor(row.name, spec, rect, rows=[row.rows], cols=[spec.dims[-2], "d_k"], depth=["B"],
                 fill=c.ink.result_fill, cols_stacked=True)
        slices(c, row.name, rect)
    width = ctx.width - 2 * style.MARGIN
    c.note("view.words", words, style.MARGIN, style.MARGIN, width, points=20, html=True)
    _note(c, note)


def build_output(c: Composer, note: str) -> None:
    """merged on top, and under it '× W_Oᵀ (+ b_O) = Y'."""
    ctx, cfg = c.ctx, c.ctx.config
    merged = value_widths(ctx.plan).merged  # D, or H·d_v under latent attention
    row = Row("O", merged, ("D", cfg.d_model), "T", result="Y")
    st = stack(ctx, merged, [row], note)
    c.tensor("merged", ctx.plan.stage(StageId.merge).tensor("merged"), st.source, rows=["T"],
             cols=[merged[0]], depth=["B"], sizes=dict([merged]))
    _feed(c, "merged", st)
    _weight_row(c, st, st.centres[0], row, ctx.plan.stage(StageId.output).tensor("Y"), "merged")
    _note(c, note)
