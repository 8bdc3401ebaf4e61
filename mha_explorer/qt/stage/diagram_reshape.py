"""Layouts of the stages where heads become separate matrices and come back:
transpose (slices of the D axis slide apart into one T×d_k card per head) and
merge (the cards are copied side by side into one [B, T, D] block).
"""

from __future__ import annotations

from PySide6.QtCore import QRectF

from mha_explorer.core.display.value_widths import value_widths
from mha_explorer.core.stages.catalog import StageId
from mha_explorer.core.units import format_bytes
from mha_explorer.qt.stage import diagram_style as style
from mha_explorer.qt.stage.diagram_compose import (
    Composer,
    StageContext,
    bottom_space,
    left_room,
    note_height,
    text_width,
    top_space,
)
from mha_explorer.qt.stage.diagram_items import BlockItem, GapItem
from mha_explorer.qt.stage.diagram_linear import (
    bottom_note,
    margin_y,
    note_h,
    row_centres,
    row_gap,
)

CARD_GAP = 14
ELLIPSIS_W = 52
STRIDES_GAP = 40
STRIDES_PT = 16
CARD_K_MAX = 36.0  # pixels per log unit for a head's card: d_k = 64 is drawn at most 252 px wide


def deck_width(count: int, card_w: float) -> float:
    slots = style.shown_heads(count)
    cards = sum(1 for s in slots if s is not None)
    return cards * card_w + (len(slots) - 1) * CARD_GAP + (ELLIPSIS_W if None in slots else 0)


def _card_units(count: int) -> int:
    return sum(1 for s in style.shown_heads(count) if s is not None)


def deck(c: Composer, prefix: str, count: int, x: float, cy: float, card_w: float, card_h: float,
         *, rows_dim: str, heads_dim: str, caption: str, grouped_by: int | None,
         width: tuple[str, int] | None = None) -> QRectF:
    """One card per head (the first three and the last when there are many),
    labelled once for the whole deck; returns the rect the cards cover. ``width``: a
    card's width dim and size (d_k unless said, latent attention's values are d_v)."""
    dims = c.ctx.plan.dims
    width = width or ("d_k", dims["d_k"])
    top = cy - card_h / 2
    for head in style.shown_heads(count):
        if head is None:  # the heads' chip says how many there are
            c.add(GapItem(f"{prefix}.more", ELLIPSIS_W, card_h, ink=c.ink), x, top)
            x += ELLIPSIS_W + CARD_GAP
            continue
        group = None if grouped_by is None else head // grouped_by
        # the key/value group shows in the outline; the tag stays in ink, readable on any tint
        c.add(BlockItem(f"{prefix}.h{head}", card_w, card_h, fill=c.ink.slice_tints[head % 2],
                        left=style.dim_qcolor(rows_dim), top=style.dim_qcolor(width[0]),
                        tag=f"h{head}", outline=style.group_color(group) if group is not None
                        else None, ink=c.ink), x, top)
        x += card_w + CARD_GAP
    right = x - CARD_GAP
    left = right - deck_width(count, card_w)
    c.label_dims(prefix, QRectF(left, top, card_w, card_h), rows=[(rows_dim, dims[rows_dim])],
                 cols=[width],
                 depth=[("B", dims["B"]), (heads_dim, dims[heads_dim])])
    rect = QRectF(left, top, right - left, card_h)
    c.caption(f"{prefix}.caption", caption, rect)
    return rect


def _strides_html(before, after, muted, lines: int = 3) -> str:
    """Strides before → after, each number on the colour of the dim it steps along,
    so the swap of the two middle axes is visible. On the colour, as a chip is, not in
    it: most dim colours are too light to read as text on a white page. ``lines``: 3 beside
    a deck; under it 1 or 2, without the contiguity the stage's sentence says."""

    def coloured(spec) -> str:
        parts = []
        for dim, stride in zip(spec.dims, spec.strides, strict=True):
            fill = style.dim_qcolor(dim)
            parts.append(f'<span style="background-color:{fill.name()}; '
                         f'color:{style.text_on(fill).name()}; font-weight:700">'
                         f'&nbsp;{stride:,}&nbsp;</span>')
        return "(" + ", ".join(parts) + ")"

    if lines == 1:
        return f"strides {coloured(before)} → {coloured(after)}"
    if lines == 2:
        return f"strides {coloured(before)}<br>&nbsp;&nbsp;&nbsp;&nbsp;→ {coloured(after)}"
    contiguous = "yes" if after.contiguous else "no"
    return (f"strides {coloured(before)}<br>&nbsp;&nbsp;&nbsp;&nbsp;→ {coloured(after)}"
            f"<br><span style='color:{muted.name()}'>contiguous: {contiguous}</span>")


def _strides_lines(ctx: StageContext, one_line: bool = False) -> list[str]:
    """The strides notes' lines as plain text (a space either side of each number)."""

    def chips(strides) -> str:
        return ", ".join(f"\u00a0{s:,}\u00a0" for s in strides)

    notes = []
    for n in "QKV":
        before = f"({chips(ctx.plan.stage(StageId.view).tensor(n).strides)})"
        after = f"({chips(ctx.plan.stage(StageId.transpose).tensor(n).strides)})"
        notes += [f"strides {before} → {after}"] if one_line else [f"strides {before}", f"    → {after}"]
    return notes


def _strides_width(ctx: StageContext, one_line: bool = False) -> float:
    """Room for the strides notes: the widest line in bold, plus the text margins."""
    return max(text_width(line, STRIDES_PT, True) for line in _strides_lines(ctx, one_line)) + 16


def _under_lines(ctx: StageContext) -> int:
    """The lines of strides under a deck: one where the canvas is that wide, else two."""
    return 1 if _strides_width(ctx, True) <= ctx.width - 2 * style.MARGIN else 2


def _transpose_k(ctx: StageContext, under: bool) -> float:
    """The cards' scale with the strides ``under`` each deck, or beside the decks. Cards may
    grow past the project stage's scale: they are narrower than D."""
    cfg = ctx.config
    slots = len(style.shown_heads(cfg.H))
    beside = 0.0 if under else STRIDES_GAP + _strides_width(ctx)
    fixed_w = 2 * style.MARGIN + _left(ctx) + (slots - 1) * CARD_GAP + ELLIPSIS_W + beside
    unit_w = _card_units(cfg.H) * style.units(cfg.d_k)
    line = _under_lines(ctx) * note_height("strides", 1000, STRIDES_PT) if under else 0.0
    fixed_h = (2 * margin_y(ctx) + 3 * (top_space() + bottom_space() + line) + 2 * row_gap(ctx)
               + note_h(ctx))
    unit_h = style.units(cfg.T) + 2 * style.units(cfg.S)
    return max(2.0, min(CARD_K_MAX, (ctx.width - fixed_w) / unit_w, (ctx.height - fixed_h) / unit_h))


def _left(ctx: StageContext) -> float:
    cfg = ctx.config
    return max(left_room([("B", cfg.batch), ("H", cfg.H)], [("T", cfg.T), ("S", cfg.S)]),
               left_room([("B", cfg.batch), ("Hkv", cfg.Hkv)], []))


def build_transpose(c: Composer) -> None:
    ctx, cfg = c.ctx, c.ctx.config
    view, stage = ctx.plan.stage(StageId.view), ctx.plan.stage(StageId.transpose)
    dims = ctx.plan.dims
    left = _left(ctx)
    # the strides under each deck when that draws the cards larger: a narrow canvas, where
    # beside the decks they took the width the cards need, or a tall one
    under = _transpose_k(ctx, True) > _transpose_k(ctx, False)
    lines = _under_lines(ctx) if under else 3
    k = _transpose_k(ctx, under)
    card_w = style.side(cfg.d_k, k)
    heights = [style.side(cfg.T, k), style.side(cfg.S, k), style.side(cfg.S, k)]
    line = lines * note_height("strides", 1000, STRIDES_PT) if under else 0.0
    centres = row_centres(ctx, heights, 1.0 + line / bottom_space())
    strides_w = _strides_width(ctx, lines == 1)
    total = left + deck_width(cfg.H, card_w) + (0.0 if under else STRIDES_GAP + strides_w)
    x0 = max(style.MARGIN, (ctx.width - total) / 2) + left
    shared = cfg.Hkv != cfg.H
    for row, (name, rows_dim) in enumerate([("Q", "T"), ("K", "S"), ("V", "S")]):
        spec = stage.tensor(name)
        heads_dim = spec.dims[1]
        count = dims[heads_dim]
        grouped_by = (cfg.group_size if name == "Q" else 1) if shared else None
        cards = deck(c, name, count, x0, centres[row], card_w, heights[row], rows_dim=rows_dim,
                     heads_dim=heads_dim, caption=f"{name}  {style.shape_text(spec.shape)}",
                     grouped_by=grouped_by)
        strides = _strides_html(view.tensor(name), spec, c.ink.muted, lines)
        if under:
            x = max(style.MARGIN, min(cards.left() - left, ctx.width - style.MARGIN - strides_w))
            c.note(f"{name}.strides", strides, x, c.bottom_of(f"{name}.caption"), strides_w,
                   points=STRIDES_PT, html=True)
        else:
            c.note(f"{name}.strides", strides, x0 + deck_width(cfg.H, card_w) + STRIDES_GAP,
                   centres[row], strides_w, "cl", points=STRIDES_PT, html=True)
    words = "Only the strides change: no data moves, each head is now its own matrix."
    if not stage.tensor("Q").contiguous:
        words += " The result is no longer contiguous."
    if shared:
        words += " Outline colours pair each query head with the K/V head it will read."
    bottom_note(c, "note", words)


def _copy_words(copies: bool) -> str:
    return ("↓  .transpose(1, 2).contiguous(): a real copy" if copies
            else "↓  .transpose(1, 2): already contiguous, no copy")


def merged_gap(card_w: float) -> float:
    """Width the heads not drawn take in the merged block: wide enough to read
    as 'more heads here', not as one thin head."""
    return max(ELLIPSIS_W, 0.75 * card_w)


def joined_slices(c: Composer, rect: QRectF, count: int, card_w: float, width_dim: str) -> None:
    """The merged block as the shown head cards laid edge to edge ('…' for the
    rest), each slice growing out of its card, so the eye sees the heads join."""
    x = rect.x()
    gap = merged_gap(card_w)
    for head in style.shown_heads(count):
        if head is None:
            c.add(GapItem("M.more", gap, rect.height(), ink=c.ink, origin="C.more"), x, rect.y())
            x += gap
            continue
        c.add(BlockItem(f"M.h{head}", card_w, rect.height(), fill=c.ink.slice_tints[head % 2],
                        left=style.dim_qcolor("T") if head == 0 else None,
                        top=style.dim_qcolor(width_dim), tag=f"h{head}", outline=c.ink.muted,
                        origin=f"C.h{head}", ink=c.ink, part=True), x, rect.y())
        x += card_w


def build_merge(c: Composer) -> None:
    ctx, cfg = c.ctx, c.ctx.config
    stage = ctx.plan.stage(StageId.merge)
    back, merged = stage.tensor("context"), stage.tensor("merged")
    widths = value_widths(ctx.plan)  # a head's values (d_k, or d_v) and the merged width
    (head_dim, head_n), merged_dim = widths.head, widths.merged[0]
    copies = merged.allocates
    left = left_room([("B", cfg.batch), ("H", cfg.H)], [("T", cfg.T)])
    slots = len(style.shown_heads(cfg.H))
    middle = top_space() + 2 * style.GAP  # the "copy" line between the rows
    fixed_w = 2 * style.MARGIN + left + (slots - 1) * CARD_GAP + ELLIPSIS_W
    fixed_h = 2 * margin_y(ctx) + 2 * (top_space() + bottom_space()) + middle + note_h(ctx)
    # the cards may be larger than in transpose: this stage has two rows, not three
    cards = _card_units(cfg.H)
    gap_units = 0.75 if cards < cfg.H else 0.0  # the merged block's '…' slot
    k = max(2.0, min(CARD_K_MAX,
                     (ctx.width - fixed_w) / ((cards + gap_units) * style.units(head_n)),
                     (ctx.height - fixed_h) / (2 * style.units(cfg.T))))
    card_w, sT = style.side(head_n, k), style.side(cfg.T, k)
    rows_h = 2 * (top_space() + sT + bottom_space()) + middle
    top = margin_y(ctx) + max(0.0, (ctx.height - note_h(ctx) - 2 * margin_y(ctx) - rows_h) / 2)
    cy_deck = top + top_space() + sT / 2
    cy_merged = cy_deck + sT / 2 + bottom_space() + middle + top_space() + sT / 2
    merged_w = cards * card_w + (merged_gap(card_w) if cards < cfg.H else 0)
    content_w = max(deck_width(cfg.H, card_w), merged_w)
    x0 = max(style.MARGIN, (ctx.width - left - content_w) / 2) + left
    deck(c, "C", cfg.H, x0, cy_deck, card_w, sT, rows_dim="T", heads_dim="H",
         caption=f"context  {style.shape_text(back.shape)}", grouped_by=None, width=widths.head)
    arrow = _copy_words(copies)  # kept on the canvas however wide the deck of heads
    arrow_x = max(style.MARGIN, min(x0, ctx.width - style.MARGIN - text_width(arrow, style.CAPTION_PT)))
    c.text("merge.arrow", arrow, arrow_x, cy_deck + sT / 2 + bottom_space() + style.GAP,
           "tl", bold=True, color=c.ink.copy_red if copies else c.ink.muted)
    rect = QRectF(x0, cy_merged - sT / 2, merged_w, sT)
    c.tensor("merged", merged, rect, rows=["T"], cols=[merged_dim], depth=["B"],
             fill=c.ink.result_fill, sizes=widths.sizes())
    joined_slices(c, rect, cfg.H, card_w, head_dim)
    if copies:
        words = (f"A copy: the {cfg.H} heads of {head_n:,} are written side by side into new "
                 f"memory, B·T·{merged_dim} = {merged.numel:,} numbers ({format_bytes(merged.nbytes)}).")
    else:
        words = ("No copy here: the axis that moved has size 1, so the memory is already in "
                 f"[B, T, {merged_dim}] order.")
    bottom_note(c, "note", words)
