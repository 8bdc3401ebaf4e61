"""Placing labelled tensors on the diagram canvas.

A stage layout asks the Composer for tensors, chips, operator signs and notes
at canvas positions; the Composer builds the items, names them with keys and
keeps them in drawing order. Every tensor is labelled the same way, as its
shape reads: the leading dims (batch, heads) at its top-left corner, the row
dim on its left, the column dims on top, and its name and full shape underneath.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QColor, QFontMetricsF
from PySide6.QtWidgets import QGraphicsItem

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.build import Plan
from mha_explorer.core.stages.records import TensorSpec
from mha_explorer.qt.stage import diagram_style as style
from mha_explorer.qt.stage.diagram_items import (
    SHADOW_STEP,
    BlockItem,
    ChipItem,
    GridItem,
    LineItem,
    NoteItem,
    TextItem,
)
from mha_explorer.qt.stage.diagram_settle import settle

if TYPE_CHECKING:
    from mha_explorer.core.stages.trace import Trace

ANCHORS = {  # fraction of the item's body rect that lands on the given point
    "tl": (0, 0), "tc": (0.5, 0), "tr": (1, 0),
    "cl": (0, 0.5), "c": (0.5, 0.5), "cr": (1, 0.5),
    "bl": (0, 1), "bc": (0.5, 1), "br": (1, 1),
}


@dataclass(frozen=True)
class StageContext:
    """What a stage layout draws from: the config and plan, the trace when it
    belongs to this config, the batch element shown, and the canvas size."""

    config: MHAConfig
    plan: Plan
    trace: Trace | None
    batch_index: int
    width: float
    height: float
    ink: style.Ink = style.LIGHT_INK  # the theme's colours
    head: int = 0  # the query head the one-head pictures show
    note_beside: bool = False  # a short, wide canvas: the closing sentence goes right of the picture
    presenting: bool = False  # on a projector: the desk's notes (what torch copies) are left out


NOTE_BESIDE_MIN = 0.2  # of the canvas width, the least a sentence beside the picture may take


def text_width(text: str, points: float = style.LABEL_PT, bold: bool = True) -> float:
    return QFontMetricsF(style.font(points, bold)).boundingRect(text).width()


def chip_size(text: str) -> tuple[float, float]:
    metrics = QFontMetricsF(style.font(style.LABEL_PT, bold=True))
    return (metrics.horizontalAdvance(text) + 2 * ChipItem.PAD_X,
            metrics.height() + 2 * ChipItem.PAD_Y)


def chip_height() -> float:
    return chip_size("T=8")[1]


def column_height(chips: int) -> float:
    """Height of a stack of chips (the row chips left of a block)."""
    return chips * (chip_height() + 4) - 4


def top_space() -> float:
    """Room above a block for its column chips."""
    return chip_height() + style.GAP


def bottom_space() -> float:
    """Room below a block for its caption."""
    return QFontMetricsF(style.font(style.CAPTION_PT, bold=True)).height() + style.GAP


def body_rect(item: QGraphicsItem) -> QRectF:
    """The part of an item that anchoring and morphing refer to (not its shadows)."""
    if hasattr(item, "size"):
        w, h = item.size()
        return QRectF(0, 0, w, h)
    return item.boundingRect()


class Composer:
    def __init__(self, ctx: StageContext) -> None:
        self.ctx = ctx
        self.ink = ctx.ink
        self.items: list[QGraphicsItem] = []
        self.settled = None  # what settle() did

    # placing ---------------------------------------------------------------------
    def settle(self) -> None:
        """Every text clear of the tensors, the lines and the other texts, and on the canvas
        (diagram_settle); what finds no room goes to a hover over the nearest tensor."""
        canvas = QRectF(0, 0, self.ctx.width, self.ctx.height).adjusted(2, 2, -2, -2)
        least = max(style.SMALLEST_PT, style.type_floor())
        self.settled = settle(self.items, canvas, least)
        for shape, texts in self.settled.hovers.items():
            if shape is not None:
                shape.setToolTip("\n".join(texts))

    def settle_note(self, key: str = "note") -> None:
        """Bring the stage's closing sentence up under its picture, wrapped no wider than
        the picture (or about half the canvas), so the view can zoom onto the two together
        instead of onto a tensor in the middle and a sentence at the canvas's foot."""
        note = next((i for i in self.items if isinstance(i, NoteItem) and i.key == key), None)
        if note is None:
            return
        picture = QRectF()
        for item in self.items:
            if item is not note:
                picture = picture.united(item.sceneBoundingRect())
        if picture.isEmpty():
            return
        room = self.ctx.width - 2 * style.MARGIN
        note.setTextWidth(-1)  # its one-line width
        width = min(note.boundingRect().width(), room, max(picture.width(), 0.55 * room))
        if self.ctx.note_beside and not self._under_is_larger(note, picture, width) \
                and self._note_right(note, picture, room):
            return
        note.setTextWidth(width)
        x = min(max(picture.center().x() - width / 2, style.MARGIN), style.MARGIN + room - width)
        note.setPos(x, picture.bottom() + style.GAP)
        if self.ctx.note_beside and note.sceneBoundingRect().bottom() > self.ctx.height:
            # a short pane kept no room under the picture, and none is left beside it: the
            # sentence would push the picture's ends out of the pane (the header explains)
            self.items.remove(note)

    def _under_is_larger(self, note: NoteItem, picture: QRectF, width: float) -> bool:
        """Whether the sentence ``width`` wide under the picture fits the canvas and lets
        the view draw the two larger than beside it would (a wide, flat picture)."""
        one_line = note.boundingRect().width()
        note.setTextWidth(width)
        under = QRectF(picture.left(), picture.top(), max(picture.width(), width),
                       picture.height() + style.GAP + note.boundingRect().height())
        note.setTextWidth(-1)
        if under.bottom() > self.ctx.height:
            return False
        beside_w = min(one_line, max(picture.width(), 1.5 * NOTE_BESIDE_MIN * self.ctx.width))
        beside = QRectF(0, 0, picture.width() + 2 * style.GAP + beside_w, picture.height())
        def fill(r: QRectF) -> float:
            return min(self.ctx.width / r.width(), self.ctx.height / max(r.height(), 1.0))
        return fill(under) >= fill(beside)

    def _note_right(self, note: NoteItem, picture: QRectF, room: float) -> bool:
        """The sentence right of the picture, centred on it, when the canvas leaves it
        NOTE_BESIDE_MIN of its width there: a short pane then keeps its height for the
        picture. False (nothing moved) when there is no such room."""
        least = NOTE_BESIDE_MIN * self.ctx.width
        # no wider than the picture (or the least it may take): a long line beside a small
        # picture would leave the view room for only a strip of both
        width = min(note.boundingRect().width(), room - picture.width() - 2 * style.GAP,
                    max(picture.width(), 1.5 * least))
        if width < least:
            return False
        note.setTextWidth(width)
        shift = max(0.0, picture.right() + 2 * style.GAP + width - (style.MARGIN + room))
        for item in self.items:  # the picture moves left where the canvas's right edge is near
            if item is not note:
                item.moveBy(-shift, 0)
        y = picture.center().y() - note.boundingRect().height() / 2
        note.setPos(picture.right() - shift + 2 * style.GAP, max(style.MARGIN, y))
        return True

    def add(self, item: QGraphicsItem, x: float, y: float, anchor: str = "tl") -> QGraphicsItem:
        body = body_rect(item)
        fx, fy = ANCHORS[anchor]
        item.setPos(x - body.x() - fx * body.width(), y - body.y() - fy * body.height())
        self.items.append(item)
        return item

    def bottom_of(self, *keys: str) -> float:
        """The lowest edge of the named items already placed."""
        return max(i.sceneBoundingRect().bottom() for i in self.items if i.key in keys)

    def line(self, key: str, points: list[QPointF], color: QColor | None = None,
             width: float = 2.0) -> LineItem:
        """A connector; its points are canvas coordinates, so it is not anchored."""
        item = LineItem(key, points, color or self.ink.muted, width)
        self.items.append(item)
        return item

    def chip(self, key: str, text: str, color: QColor, x: float, y: float, anchor: str = "tl",
             origin: str | None = None) -> ChipItem:
        return self.add(ChipItem(key, text, color, origin=origin), x, y, anchor)

    def dim_chip(self, key: str, dim: str, size: int, x: float, y: float,
                 anchor: str = "tl") -> ChipItem:
        return self.chip(key, style.dim_label(dim, size), style.dim_qcolor(dim), x, y, anchor)

    def text(self, key: str, text: str, x: float, y: float, anchor: str = "tl", *,
             points: float = style.CAPTION_PT, bold: bool = False,
             color: QColor | None = None, origin: str | None = None) -> TextItem:
        item = TextItem(key, text, points=points, bold=bold, color=color or self.ink.ink,
                        origin=origin)
        return self.add(item, x, y, anchor)

    def operator(self, key: str, sign: str, x: float, y: float) -> TextItem:
        item = self.text(key, sign, x, y, "c", points=style.OPERATOR_PT, color=self.ink.muted)
        item.placement = "fixed"  # between two tensors: the labels keep clear of it
        return item

    def note(self, key: str, text: str, x: float, y: float, width: float, anchor: str = "tl",
             points: float = style.NOTE_PT, color: QColor | None = None,
             html: bool = False) -> NoteItem:
        item = NoteItem(key, text, width, points=points, color=color or self.ink.ink, html=html)
        item.detail = True  # the header says the stage too: a sentence with no room is a hover
        return self.add(item, x, y, anchor)

    def grid(self, key: str, rect: QRectF, rows: int, cols: int, *, image, hidden_from,
             content: str, origin: str | None = None) -> GridItem:
        item = GridItem(key, rect.width(), rect.height(), rows, cols, image=image,
                        hidden_from=hidden_from, content=content,
                        left=style.dim_qcolor("T"), top=style.dim_qcolor("S"), origin=origin,
                        ink=self.ink)
        return self.add(item, rect.x(), rect.y())

    # labelled tensors ---------------------------------------------------------------
    def chips_row(self, key: str, dims: list[tuple[str, int]], cx: float, bottom: float,
                  min_left: float | None = None) -> None:
        """Column dims centred above a block ('H=8 × d_k=64' as two chips and a sign),
        never starting left of ``min_left`` (where the leading dims sit)."""
        sizes = [chip_size(style.dim_label(d, n))[0] for d, n in dims]
        times = times_width()
        total = chips_row_width(dims)
        x = cx - total / 2
        if min_left is not None:
            x = max(x, min_left)
        x = min(x, self.ctx.width - style.MARGIN / 2 - total)
        for i, ((dim, n), w) in enumerate(zip(dims, sizes, strict=False)):
            if i:
                self.text(f"{key}.x{i}", "×", x + times / 2, bottom - chip_height() / 2, "c",
                          points=style.LABEL_PT, color=self.ink.muted)
                x += times
            self.dim_chip(f"{key}.{dim}", dim, n, x, bottom, "bl")
            x += w

    def chips_column(self, key: str, dims: list[tuple[str, int]], left: float, bottom: float) -> None:
        """Column dims one above another (the first on top), from ``left``: a narrow block's
        'H=8' over 'd_k=64', where side by side they would reach past its neighbours."""
        for i, (dim, n) in enumerate(reversed(dims)):
            self.dim_chip(f"{key}.{dim}", dim, n, left, bottom - i * (chip_height() + 2), "bl")

    def label_dims(self, key: str, rect: QRectF, *, rows: list[tuple[str, int]],
                   cols: list[tuple[str, int]], depth: list[tuple[str, int]] = (),
                   lift: float = 0.0, words: tuple[float, float] = (0.0, 0.0),
                   cols_stacked: bool = False) -> None:
        """Name a block's dims around it: the row dim to its left, the column dims
        above it, and the leading dims (batch, heads) at its top-left corner, as a
        shape is written: [B, H | T, d_k]. ``words``: (left, top) room the block's
        token names take next to it; the chips go beyond them. ``cols_stacked``: the
        column dims one above another."""
        top = rect.top() - lift - 6 - words[1]
        if cols and cols_stacked:
            self.chips_column(f"{key}.top", cols, rect.left(), top)
        elif cols:
            self.chips_row(f"{key}.top", cols, rect.center().x(), top, min_left=rect.left())
        x = rect.left() - style.GAP - words[0]
        for dim, n in reversed(list(depth)):
            chip = self.dim_chip(f"{key}.left.{dim}", dim, n, x, top, "br")
            x -= chip.boundingRect().width() + style.chip_space()
        for i, (dim, n) in enumerate(rows):
            cy = rect.center().y() + (i - (len(rows) - 1) / 2) * (chip_height() + 4)
            self.dim_chip(f"{key}.left.{dim}", dim, n, rect.left() - style.GAP - words[0], cy, "cr")

    def tensor(self, key: str, spec: TensorSpec | None, rect: QRectF, *,
               rows: list[str], cols: list[str], depth: list[str] = (), fill: QColor | None = None,
               caption: str | None = None, origin: str | None = None, tag: str = "",
               tag_color: QColor | None = None, outline: QColor | None = None,
               sizes: dict[str, int] | None = None, show_left: bool = True,
               show_top: bool = True, caption_width: float | None = None,
               caption_room: tuple[float, float] | None = None, cols_stacked: bool = False) -> BlockItem:
        """A block with its dims labelled. ``rows``/``cols``/``depth`` name plan dims;
        their sizes come from the plan's dims (or ``sizes`` for a tensor the plan
        does not list, such as a weight)."""
        dims = dict(self.ctx.plan.dims)
        dims.update(sizes or {})
        layers = sum(1 for d in depth if dims[d] > 1)
        layer_color = style.dim_qcolor(depth[0]) if depth else None
        block = BlockItem(key, rect.width(), rect.height(), fill=fill or self.ink.block_fill,
                          left=style.dim_qcolor(rows[-1]), top=style.dim_qcolor(cols[-1]),
                          layers=min(layers, 2), layer_color=layer_color, tag=tag,
                          tag_color=tag_color, outline=outline, origin=origin, ink=self.ink)
        self.add(block, rect.x(), rect.y())
        self.label_dims(key, rect, rows=[(d, dims[d]) for d in rows] if show_left else [],
                        cols=[(d, dims[d]) for d in cols] if show_top else [],
                        depth=[(d, dims[d]) for d in depth] if show_left else [],
                        lift=SHADOW_STEP * min(layers, 2), cols_stacked=cols_stacked)
        if caption is None and spec is not None:
            caption = f"{spec.name}  {style.shape_text(spec.shape)}"
        if caption:
            # caption_room: (left, right) limits when the caption may leave the block's width
            left_limit, right_limit = caption_room if caption_room is not None else (None, None)
            chips_bottom = rect.center().y() + column_height(len(rows)) / 2
            self.caption(f"{key}.caption", caption, rect, caption_width, left_limit=left_limit,
                         right_limit=right_limit, below=chips_bottom if show_left else None)
        return block

    def caption(self, key: str, text: str, rect: QRectF, max_width: float | None = None, *,
                right_limit: float | None = None, left_limit: float | None = None,
                below: float | None = None) -> TextItem:
        """Name and shape under a block: centred, on two lines when wider than
        ``max_width``, kept between ``left_limit`` (default: the block's left edge,
        where its row chips are) and ``right_limit``; when it has to reach under
        the row chips it goes below them (``below``)."""
        if max_width is not None and text_width(text, style.CAPTION_PT, True) > max_width:
            text = text.replace("  ", "\n", 1)
        width = max(text_width(line, style.CAPTION_PT, True) for line in text.splitlines())
        x = rect.center().x() - width / 2
        if right_limit is not None:
            x = min(x, right_limit - width)
        x = max(x, rect.left() if left_limit is None else left_limit)
        x = min(x, self.ctx.width - style.MARGIN / 2 - width)  # and never off the canvas
        y = rect.bottom() + 6
        if x < rect.left() - 1 and below is not None:
            y = max(y, below + 4)
        return self.text(key, text, x, y, "tl", bold=True)


def note_height(text: str, width: float, points: float = style.NOTE_PT, html: bool = False) -> float:
    """How tall a note will be once wrapped to ``width``."""
    return NoteItem("", text, width, points=points, html=html).boundingRect().height()


def chips_row_width(dims: list[tuple[str, int]]) -> float:
    """Width of 'H=8 × d_k=64': the chips and the signs between them."""
    return sum(chip_size(style.dim_label(d, n))[0] for d, n in dims) + times_width() * (len(dims) - 1)


def times_width() -> float:
    """The room of the '×' between two chips: its ink and a space each side."""
    sign = QFontMetricsF(style.font(style.LABEL_PT)).horizontalAdvance("×")  # as its item is wide
    return sign + 2 * style.chip_space()


def left_room(depth: list[tuple[str, int]], rows: list[tuple[str, int]]) -> float:
    """Room left of a block for its labels: the row chip, or the leading dims'
    chips side by side at its corner, whichever is wider."""
    corner = sum(chip_size(style.dim_label(d, n))[0] + style.chip_space() for d, n in depth)
    side = max((chip_size(style.dim_label(d, n))[0] for d, n in rows), default=0.0)
    return max(corner, side) + style.GAP
