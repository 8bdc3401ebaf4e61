"""The group strip under the scores of grouped-query attention: a tile per query head,
coloured by the key/value head it reads, each group's tiles joined to that K/V head's tile
below them, so the pairing of heads is seen at once. The strip is one drawing (its tiles
are pinned), and its height is kept free in the scores' layout whenever heads share K/V.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF

from mha_explorer.qt.stage import diagram_style as style
from mha_explorer.qt.stage.diagram_compose import Composer, StageContext, chip_height, chip_size, text_width

TILE, TILE_GAP, MAX_TILES = 30, 4, 16


def strip_height(ctx: StageContext) -> float:
    # two rows of tiles and the gap above them
    return 0.0 if ctx.config.Hkv == ctx.config.H else 2 * _tile() + 3 * style.GAP + 10


def _tile() -> float:
    """A tile's height in the group strip: a chip's, at the type drawn now."""
    return max(TILE, chip_height())


def group_strip(c: Composer, x: float, y: float) -> None:
    """Which query heads share a key/value head: tiles coloured by group. The strip is one
    drawing: its tiles and words stay where they are (a tile moved would pair the wrong heads)."""
    cfg = c.ctx.config
    first = len(c.items)
    tile_h = _tile()
    label_w = text_width("query heads", style.LABEL_PT, True) + style.GAP
    c.text("strip.q", "query heads", x, y + tile_h / 2, "cl", points=style.LABEL_PT, bold=True)
    row2 = y + tile_h + 2 * style.GAP
    c.text("strip.kv", "K/V heads", x, row2 + tile_h / 2, "cl", points=style.LABEL_PT, bold=True)
    x0 = x + label_w
    tile = max(chip_size(str(min(cfg.H, MAX_TILES) - 1))[0], TILE)
    gap = max(TILE_GAP, style.chip_space())  # each head's number a word of its own

    def fitting(room: float) -> int:
        return int((room + gap) // (tile + gap))

    room = c.ctx.width - style.MARGIN - x0
    shown = cfg.H
    if min(MAX_TILES, fitting(room)) < cfg.H:  # leave room for "… H=96" after the tiles
        more_w = text_width(f"… H={cfg.H:,}", style.LABEL_PT, True) + 12
        shown = max(1, min(MAX_TILES, fitting(room - more_w)))
    centres: dict[int, list[float]] = {}
    for head in range(shown):
        group = cfg.kv_head_of(head)
        tx = x0 + head * (tile + gap) + tile / 2
        c.chip(f"strip.h{head}", f"{head}", style.group_color(group), tx, y, "tc")
        centres.setdefault(group, []).append(tx)
    if shown < cfg.H:
        c.text("strip.more", f"… H={cfg.H:,}", x0 + shown * (tile + gap) + 6, y + tile_h / 2,
               "cl", points=style.LABEL_PT, bold=True, color=c.ink.muted)
    for group, xs in centres.items():
        cx = sum(xs) / len(xs)
        color = style.group_color(group)
        c.line(f"strip.link{group}", [QPointF(xs[0], y + tile_h + 6), QPointF(xs[-1], y + tile_h + 6)],
               color, 3)
        c.line(f"strip.stem{group}", [QPointF(cx, y + tile_h + 6), QPointF(cx, row2 - 2)], color, 3)
        c.chip(f"strip.kv{group}", f"{group}", color, cx, row2, "tc")
    for item in c.items[first:]:
        item.placement = "pin"
