"""Layouts of the attention stages, drawn for one head of one sequence:
scores (Q on the left, Kᵀ on top, the T×S grid where they meet), softmax (the
same grid, each row now summing to 1) and the weighted sum (the weights on
the left, V on top, the context where they meet).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QRectF
from PySide6.QtGui import QFontMetricsF

from mha_explorer.core.display.diagram import head_matrix, hidden_from
from mha_explorer.core.display.value_widths import value_widths
from mha_explorer.core.stages.catalog import StageId
from mha_explorer.core.stages.trace import current_trace
from mha_explorer.qt.stage import diagram_style as style
from mha_explorer.qt.stage import diagram_tokens as tokens
from mha_explorer.qt.stage.diagram_attention_notes import note_room, scores_note, softmax_note, weighted_note
from mha_explorer.qt.stage.diagram_compose import (
    Composer,
    StageContext,
    bottom_space,
    chip_height,
    chip_size,
    left_room,
    text_width,
    top_space,
)
from mha_explorer.qt.stage.diagram_data import scores_image, weights_image
from mha_explorer.qt.stage.diagram_group_strip import group_strip, strip_height

K_MAX = 96.0  # pixels per log unit for the grid: T = 8 draws at most 384 px
GROWTH_ALONE = 1.25  # softmax's grid, with no operand beside it, may grow this much past K_MAX
SUM_PT = 14  # 'Σ=1' beside each row
SCALE_PT = 20  # '× 1/√64 = 0.125' beside the scores
SUMS_ROWS_MAX = 16  # this few rows, each as tall as its 'Σ=1', carry their own
DK_FACTOR = 0.5  # the d_k side of the operands, shortened so the grid stays the star...
DK_SHARE = 0.6  # ...and never more than this share of the grid's side (d_k = 256 drew Kᵀ as tall)
GAP_X, GAP_Y = 18, 18


@dataclass
class Cross:
    """Rects of one 'left operand × top operand = result' cross."""

    left: QRectF
    top: QRectF
    result: QRectF
    k: float
    under: bool  # the batch and head chips (and the scale) under the result, not beside it


def operand_units(ctx: StageContext, width: int) -> float:
    """An operand's d_k (or d_v) side in log units: shortened, and under the grid's sides."""
    cfg = ctx.config
    return min(DK_FACTOR * style.units(width), DK_SHARE * min(style.units(cfg.T), style.units(cfg.S)))


def _left_w(ctx: StageContext, under: bool = False) -> float:
    """Room left of the picture for the row chips and, unless they go ``under`` the result
    (scores, weighted sum), the batch and head chips at the grid's corner."""
    cfg = ctx.config
    return left_room([] if under else [("B", cfg.batch), ("H", cfg.H)], [("T", cfg.T), ("S", cfg.S)])


def _chips_w(ctx: StageContext) -> float:
    """Width of the 'B=2' and 'H=8' chips side by side."""
    dims = ctx.plan.dims
    return sum(chip_size(style.dim_label(d, dims[d]))[0] + style.chip_space() + 2 for d in ("B", "H"))


def text_height(points: float) -> float:
    return QFontMetricsF(style.font(points, True)).height()


def _right_w(ctx: StageContext, under: bool) -> float:
    """Room right of the grid: the operands' captions, and unless they go ``under`` the
    result, the batch and head chips and the scale."""
    cfg = ctx.config
    words = [text_width(f"{name}  {_head_word(ctx)}", style.CAPTION_PT, True) for name in ("Kᵀ", "V")]
    if not under:
        words += [_chips_w(ctx), text_width(_scale_text(cfg), SCALE_PT, True)]
    return max(words) + 2 * style.GAP


def _under_h(under: bool) -> float:
    """Height the chips and the scale take under the result's caption when ``under``."""
    return chip_height() + 8 + text_height(SCALE_PT) if under else 0.0


def words_under(ctx: StageContext, left: float, top: float) -> bool:
    """Whether the chips and the scale go under the result: when that draws the grid larger
    (a narrow canvas, where beside it they would take the width the grid needs)."""
    return _k_with(ctx, left, top, True) > _k_with(ctx, left, top, False)


def _k_with(ctx: StageContext, left: float, top: float, under: bool | None = None) -> float:
    """The grid's scale when the words take ``left`` beside it and ``top`` above it;
    above, they share the height of Kᵀ (or of V) and the gap under it."""
    cfg = ctx.config
    if under is None:
        under = words_under(ctx, left, top)
    uT, uS, udk = style.units(cfg.T), style.units(cfg.S), operand_units(ctx, cfg.d_k)
    udv = operand_units(ctx, value_widths(ctx.plan).head[1])  # V's width beside the grid
    free_w = ctx.width - 2 * style.MARGIN - _left_w(ctx, under) - GAP_X - left - _right_w(ctx, under)
    room_h = (ctx.height - 2 * style.MARGIN - top_space() - bottom_space() - note_room(ctx)
              - _under_h(under))
    scores_h = (room_h - strip_height(ctx) - max(GAP_Y, top)) / (udk + uT)
    weighted_h = min((room_h - GAP_Y) / (uS + uT), (room_h - top) / uT)
    return max(2.0, min(K_MAX, free_w / max(max(udk, udv) + uS, 1), scores_h, weighted_h))


def _k_alone(ctx: StageContext, left: float, top: float) -> float:
    """The grid's scale at softmax, where no operand shares the room: the grid
    alone takes the height Kᵀ (or V) and the grid share at the other two stages,
    so the weights a class reads there are drawn larger."""
    return _k_fit(ctx, left, top, _sums_beside_fit(ctx, left, top))


def _k_fit(ctx: StageContext, left: float, top: float, beside: bool) -> float:
    """Softmax's scale with the rows' sums ``beside`` the grid, or on a line under it."""
    cfg = ctx.config
    uT, uS = style.units(cfg.T), style.units(cfg.S)
    free_w = ctx.width - 2 * style.MARGIN - _left_w(ctx) - left - (_sums_w() if beside else 0.0)
    room_h = ctx.height - 2 * style.MARGIN - _around_alone(ctx, not beside) - note_room(ctx)
    return max(2.0, min(K_MAX * GROWTH_ALONE, free_w / max(uS, 1), (room_h - top) / uT))


def _rows_carry_sums(cfg, row_h: float) -> bool:
    """Whether each row can carry its own 'Σ=1': few rows, each as tall as the words are
    at the type drawn now (presentation's larger type needs taller rows, or the sums pile)."""
    return cfg.T <= SUMS_ROWS_MAX and row_h >= text_height(SUM_PT)


def _sums_beside_fit(ctx: StageContext, left: float, top: float) -> bool:
    """Whether the rows are tall enough for a 'Σ=1' each when room is kept for them;
    else 'every row: Σ=1' goes under the grid and the grid takes the width (beside
    it, at presentation's type floor, that line took most of a narrow pane)."""
    cfg = ctx.config
    k = _k_fit(ctx, left, top, True)
    return _rows_carry_sums(cfg, style.side(cfg.T, k) / cfg.T)


def _sums_w() -> float:
    """Room right of softmax's grid for the rows' 'Σ=1' (the B and H chips sit at its top left)."""
    return text_width("Σ=1", SUM_PT, True) + style.GAP + 4


def _around_alone(ctx: StageContext, sums_line: bool) -> float:
    """Above softmax's grid its chips; under it the caption, the head, and the sums' line."""
    # a short pane: the head line sits beside the caption, and the sentence beside the
    # grid says the rows sum to 1
    lines = 0 if ctx.note_beside else int(ctx.config.H > 1) + int(sums_line)
    return top_space() + bottom_space() + lines * (text_height(style.CAPTION_PT) + 4)


def token_bands(ctx: StageContext, alone: bool = False) -> tokens.TokenBands:
    """Room for the words around the grid; the key words stand upright when they
    fit their columns at the scale that room leaves, else they are turned.
    ``alone``: for the grid drawn without operands (softmax)."""
    cfg = ctx.config
    scale = _k_alone if alone else _k_with

    def upright_fits(left: float, top: float) -> bool:
        _, kv = tokens.token_names(ctx)
        pitch = style.side(cfg.S, scale(ctx, left, top)) / cfg.S
        return tokens.widest(kv) + tokens.LABEL_AIR <= pitch

    return tokens.bands(ctx, upright_fits)


def attention_k(ctx: StageContext) -> float:
    """One scale for scores and the weighted sum, so the grid keeps its size beside
    its operands (softmax, alone, draws it larger: the slide between stretches it)."""
    bands = token_bands(ctx)
    return _k_with(ctx, bands.left, bands.top)


def _origin(ctx: StageContext, content_w: float, content_h: float, under: bool) -> tuple[float, float]:
    left = _left_w(ctx, under)
    x = max(style.MARGIN, (ctx.width - left - content_w - _right_w(ctx, under)) / 2) + left
    y = style.MARGIN + max(0.0, (ctx.height - note_room(ctx) - 2 * style.MARGIN - content_h) / 2)
    return x, y


def softmax_rect(ctx: StageContext) -> QRectF:
    """The weights grid alone, as large as the canvas lets it be; its words beside it."""
    cfg = ctx.config
    bands = token_bands(ctx, alone=True)
    beside = _sums_beside_fit(ctx, bands.left, bands.top)
    k = _k_fit(ctx, bands.left, bands.top, beside)
    gw, gh = style.side(cfg.S, k), style.side(cfg.T, k)
    content_w = bands.left + gw + (_sums_w() if beside else 0.0)
    content_h = _around_alone(ctx, not beside) + bands.top + gh
    x = max(style.MARGIN, (ctx.width - _left_w(ctx) - content_w) / 2) + _left_w(ctx)
    y = style.MARGIN + max(0.0, (ctx.height - note_room(ctx) - 2 * style.MARGIN - content_h) / 2)
    return QRectF(x + bands.left, y + top_space() + bands.top, gw, gh)


def scores_cross(ctx: StageContext) -> Cross:
    """Q on the left, Kᵀ on top, the grid where they meet; the words in between."""
    cfg = ctx.config
    k = attention_k(ctx)
    bands = token_bands(ctx)
    under = words_under(ctx, bands.left, bands.top)
    gw, gh = style.side(cfg.S, k), style.side(cfg.T, k)
    dk = max(style.min_side(), k * operand_units(ctx, cfg.d_k))
    above = dk + max(GAP_Y, bands.top)  # the key words between Kᵀ and the grid, not on Kᵀ
    content_h = top_space() + above + gh + bottom_space() + _under_h(under) + strip_height(ctx)
    x, y = _origin(ctx, dk + GAP_X + bands.left + gw, content_h, under)
    top = QRectF(x + dk + GAP_X + bands.left, y + top_space(), gw, dk)
    result = QRectF(top.x(), top.y() + above, gw, gh)
    return Cross(QRectF(x, result.y(), dk, gh), top, result, k, under)


def weighted_cross(ctx: StageContext) -> Cross:
    """The weights on the left (their words beside them), V on top, the context below V."""
    cfg = ctx.config
    k = attention_k(ctx)
    bands = token_bands(ctx)
    under = words_under(ctx, bands.left, bands.top)
    gw, gh = style.side(cfg.S, k), style.side(cfg.T, k)
    dk = max(style.min_side(), k * operand_units(ctx, value_widths(ctx.plan).head[1]))
    above = max(gw + GAP_Y, bands.top)  # V, or the key words over the weights if taller
    x, y = _origin(ctx, bands.left + gw + GAP_X + dk,
                   top_space() + above + gh + bottom_space() + _under_h(under), under)
    x += bands.left
    top = QRectF(x + gw + GAP_X, y + top_space() + above - gw - GAP_Y, dk, gw)
    result = QRectF(top.x(), top.bottom() + GAP_Y, dk, gh)
    return Cross(QRectF(x, result.y(), gw, gh), top, result, k, under)


def _scale_text(cfg) -> str:
    return f"× 1/√{cfg.d_k:,} = {1 / cfg.d_k ** 0.5:.4g}"


def _head_word(ctx: StageContext) -> str:
    """The K/V head the shown query head reads: its own, or its group's."""
    cfg = ctx.config
    if cfg.Hkv == cfg.H:
        return f"head {ctx.head}"
    return f"kv head {ctx.head // cfg.group_size}"


def _grid(c: Composer, rect: QRectF, stage: str, name: str, origin: str | None = None) -> None:
    """The chosen head of the shown sequence, coloured from the trace when it is small enough."""
    ctx, cfg = c.ctx, c.ctx.config
    trace = current_trace(ctx.trace, cfg)
    values = head_matrix(trace, stage, name, ctx.batch_index, ctx.head)
    image = None if values is None else (scores_image(values) if name == "scores"
                                         else weights_image(values))
    c.grid("grid", rect, cfg.T, cfg.S, image=image, hidden_from=hidden_from(cfg),
           content=name, origin=origin)


def _depth_chips(c: Composer, key: str, x: float, y: float, across: bool = False) -> float:
    """'B=2' and 'H=8' to the right of a one-head picture, one above the other or
    side by side (``across``); returns the y below them."""
    dims = c.ctx.plan.dims
    for dim in ("B", "H"):
        chip = c.dim_chip(f"{key}.{dim}", dim, dims[dim], x, y)
        if across:
            x += chip.boundingRect().width() + style.chip_space()
        else:
            y += chip_height() + 4
    return y + chip_height() + 4 if across else y


def _bottom_note(c: Composer, text: str) -> None:
    ctx = c.ctx
    c.note("note", text, style.MARGIN, ctx.height - style.MARGIN, ctx.width - 2 * style.MARGIN, "bl")


def build_scores(c: Composer) -> None:
    ctx, cfg = c.ctx, c.ctx.config
    cross = scores_cross(ctx)
    bands = token_bands(ctx)
    head = _head_word(ctx)
    c.tensor("Q.h0", None, cross.left, rows=["T"], cols=["d_k"], caption=f"Q  head {ctx.head}",
             tag=f"h{ctx.head}", caption_width=cross.left.width() + GAP_X + bands.left - style.GAP)
    c.tensor("K.h0", None, cross.top, rows=["d_k"], cols=["S"], caption="")  # its caption names the head
    c.text("K.h0.caption", f"Kᵀ  {head}", cross.top.right() + style.GAP, cross.top.center().y(),
           "cl", bold=True)
    _grid(c, cross.result, StageId.scores, "scores")
    tokens.draw(c, cross.result, bands)
    spec = ctx.plan.stage(StageId.scores).tensor("scores")
    caption = c.caption("grid.caption", f"scores  {style.shape_text(spec.shape)}", cross.result)
    if cross.under:  # a narrow canvas: the grid takes the width, its chips and scale go under it
        x = cross.result.left()
        below = _depth_chips(c, "grid.depth", x, caption.sceneBoundingRect().bottom() + 4, across=True)
        at = (x, below + 4)
    else:
        right = cross.result.right() + style.GAP + 4
        stacked = 2 * (chip_height() + 4) + 8 + text_height(SCALE_PT) <= cross.result.height() + 4
        below = _depth_chips(c, "grid.depth", right, cross.result.top(), across=not stacked)
        # a short grid: the chips side by side, so the line stays clear of the caption below
        at = (right, max(below + 8, cross.result.center().y()))
    scale = c.text("grid.scale", _scale_text(cfg), *at, "tl", points=SCALE_PT, bold=True)
    scale.detail = True  # the √d_k numbers are in the header too
    if cfg.Hkv != cfg.H:
        below = max(i.sceneBoundingRect().bottom() for i in c.items)  # under all of the picture
        group_strip(c, cross.left.left() - _left_w(ctx, cross.under) + style.GAP, below + 10)
    _bottom_note(c, scores_note(ctx))


def _row_sums(c: Composer, rect: QRectF) -> None:
    """'Σ=1' beside every row when the rows are tall enough to carry it."""
    cfg = c.ctx.config
    hidden = hidden_from(cfg)
    row_h = rect.height() / cfg.T
    x = rect.right() + style.GAP
    room = c.ctx.width - style.MARGIN - x >= _sums_w() - style.GAP
    if _rows_carry_sums(cfg, row_h) and room:
        for i in range(cfg.T):
            empty = hidden is not None and hidden[i] == 0
            total = c.text(f"sum.{i}", "Σ=0" if empty else "Σ=1", x, rect.top() + (i + 0.5) * row_h,
                           "cl", points=SUM_PT, bold=True, color=c.ink.muted if empty else c.ink.ink)
            total.placement, total.detail = "pin", True  # beside its row, or on the grid's hover
    elif not c.ctx.note_beside:  # under the grid's caption: beside it, it took the grid's width
        c.text("sum.all", "every row: Σ=1", rect.center().x(),
               c.bottom_of("grid.caption", "grid.head") + 4, "tc", points=style.LABEL_PT, bold=True)


def build_softmax(c: Composer) -> None:
    ctx, cfg = c.ctx, c.ctx.config
    rect = softmax_rect(ctx)
    spec = ctx.plan.stage(StageId.softmax).tensor("weights")
    _grid(c, rect, StageId.softmax, "weights")
    bands = token_bands(ctx, alone=True)
    tokens.draw(c, rect, bands)
    dims = ctx.plan.dims
    c.label_dims("grid", rect, rows=[("T", dims["T"])], cols=[("S", dims["S"])],
                 depth=[("B", dims["B"]), ("H", dims["H"])], lift=4, words=(bands.left, bands.top))
    caption = c.caption("grid.caption", f"weights  {style.shape_text(spec.shape)}", rect)
    head = f"head {ctx.head} of {cfg.H:,}"
    if cfg.H > 1 and ctx.note_beside:  # a short pane keeps its height for the grid
        at = caption.sceneBoundingRect()
        c.text("grid.head", head, at.right() + style.GAP, at.center().y(), "cl", color=c.ink.muted)
    elif cfg.H > 1:  # one head: the caption says it all, and the line would sit on it
        c.text("grid.head", head, rect.center().x(), rect.bottom() + bottom_space(), "tc",
               color=c.ink.muted)
    _row_sums(c, rect)
    _bottom_note(c, softmax_note(ctx))


def build_weighted_sum(c: Composer) -> None:
    ctx, cfg = c.ctx, c.ctx.config
    cross = weighted_cross(ctx)
    dims = ctx.plan.dims
    head = _head_word(ctx)
    _grid(c, cross.left, StageId.softmax, "weights")
    bands = token_bands(ctx)
    tokens.draw(c, cross.left, bands)
    # the batch and head chips at the grid's corner, or once, under the context (narrow)
    depth = [] if cross.under else [("B", dims["B"]), ("H", dims["H"])]
    c.label_dims("grid", cross.left, rows=[("T", dims["T"])], cols=[("S", dims["S"])],
                 depth=depth, lift=4, words=(bands.left, bands.top))
    c.caption("grid.caption", f"A  head {ctx.head}", cross.left, cross.left.width() + GAP_X - 4)
    widths = value_widths(ctx.plan)  # d_k, or latent attention's d_v
    c.tensor("V.h0", None, cross.top, rows=["S"], cols=[widths.head[0]], caption="",
             tag=f"h{ctx.head // cfg.group_size}", show_left=False, sizes=widths.sizes())
    c.text("V.h0.caption", f"V  {head}", cross.top.right() + style.GAP, cross.top.center().y(),
           "cl", bold=True)
    spec = ctx.plan.stage(StageId.weighted_sum).tensor("context")
    c.tensor("C.h0", spec, cross.result, rows=["T"], cols=[widths.head[0]], fill=c.ink.result_fill,
             show_left=False, show_top=False, tag=f"h{ctx.head}", sizes=widths.sizes())
    if cross.under:  # under the context's caption: beside it they took the grid's width
        _depth_chips(c, "ctx.depth", cross.result.left(), c.bottom_of("C.h0.caption") + 4, across=True)
    else:
        _depth_chips(c, "ctx.depth", cross.result.right() + style.GAP + 4, cross.result.top())
    _bottom_note(c, weighted_note(ctx))
