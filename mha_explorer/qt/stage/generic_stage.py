"""A generic drawing for the stages without a diagram of their own (positions, RoPE, the
steps of latent attention; the catalog's ``drawn``): the
stage's title, formula and explanation, then one block per tensor of the plan with a
chip per named dim, new tensors solid and views dashed.

``stage_blocks`` is plain Python (no Qt, no torch): the layout the painter follows, so
it can be tested and reused by a diagram that wants its own look.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QPoint, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from mha_explorer.core.display.colors import ink_on, relative_dim_color
from mha_explorer.core.stages.catalog import STAGES, StageId, is_stage
from mha_explorer.core.stages.records import Stage
from mha_explorer.core.units import format_bytes
from mha_explorer.qt.picture import DrawnShape, DrawnText, seen_rect

MIN_SIDE, MAX_SIDE = 24.0, 150.0  # block sides in pixels, the log of the size in between
LEAST_PX = 11.0  # no text it draws is smaller
NOTES_GAP = 8  # pixels between the captions and the notes under them


def chip_color(dim: str) -> str:
    return relative_dim_color(dim)


@dataclass(frozen=True)
class Block:
    """One tensor as drawn: ``width``/``height`` in pixels follow the log of its last two sizes."""

    name: str
    chips: tuple[tuple[str, int], ...]  # (dim, size) in order
    allocates: bool
    contiguous: bool
    width: float
    height: float
    caption: str  # "new, 256.0 KiB" or "view, no copy"


def _side(size: int, largest: int) -> float:
    if largest <= 1:
        return MIN_SIDE
    return MIN_SIDE + (MAX_SIDE - MIN_SIDE) * math.log(max(size, 1)) / math.log(largest)


def stage_blocks(stage: Stage) -> list[Block]:
    """The blocks of ``stage``'s tensors, sized against the stage's largest last-two sizes."""
    largest = max((max(t.shape[-2:], default=1) for t in stage.tensors if t.shape), default=1)
    blocks = []
    for t in stage.tensors:
        rows = t.shape[-2] if len(t.shape) >= 2 else 1
        cols = t.shape[-1] if t.shape else 1
        caption = (f"new, {format_bytes(t.nbytes)}" if t.allocates else "view, no copy")
        if not t.contiguous:
            caption += ", strided"
        blocks.append(Block(t.name, tuple(zip(t.dims, t.shape, strict=True)), t.allocates, t.contiguous,
                            _side(cols, largest), _side(rows, largest), caption))
    return blocks


def is_generic(stage_id: str) -> bool:
    """Whether the classic diagram has no drawing of its own for ``stage_id``."""
    return not (is_stage(stage_id) and STAGES[StageId(stage_id)].drawn)


@dataclass(frozen=True)
class Placed:
    """Where one block's parts go in the view: its name, body, chips (wrapped to the
    column) and caption; ``column`` is the block's share of the row."""

    block: Block
    column: QRectF
    name: QRectF
    body: QRectF
    chips: tuple[tuple[str, QRectF], ...]
    caption: QRectF


def is_matrix(block: Block) -> bool:
    """A [.., T, S] tensor: one query row per token against one column per key."""
    return [d for d, _ in block.chips[-2:]] == ["T", "S"]


class GenericStageView(QWidget):
    """Public: ``set_stage(stage: Stage | None, matrices=None)``, ``stage`` (the Stage shown),
    ``blocks`` (its Block list), ``placed()`` (where each block is drawn), ``text_px``.

    The stage's title, formula and explanation are the header's (beside or above this
    view): here only the tensors, side by side across the pane, sized to fill it and
    their type with it; an attention matrix shows the chosen head's numbers as colours
    (``matrices``: block name -> QImage); the stage's notes close the picture.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("generic_stage")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumSize(320, 240)
        self.stage: Stage | None = None
        self.blocks: list[Block] = []
        self.matrices: dict = {}
        self.matrix_note = ""  # e.g. "head 0 of 4", under a matrix
        self.type_floor_px = 0.0  # presentation: no text smaller than this

    def set_stage(self, stage: Stage | None, matrices: dict | None = None, matrix_note: str = "") -> None:
        self.stage = stage
        self.blocks = stage_blocks(stage) if stage is not None else []
        self.matrices = dict(matrices or {})
        self.matrix_note = matrix_note
        self.setAccessibleName(stage.title if stage is not None else "no stage")
        self.setToolTip(self.hover_words())
        self.update()

    # layout --------------------------------------------------------------------------------
    @property
    def text_px(self) -> float:
        """The body type's pixel size: grows with the pane (about 1/22 of its height, and
        narrow columns hold it back), never below 11 px or the presentation floor."""
        n = max(1, len(self.blocks))
        px = min(self.height() / 22, (self.width() / n) / 9, 40.0)
        return max(px, LEAST_PX, self.type_floor_px)

    def _font(self, scale: float = 1.0, bold: bool = False) -> QFont:
        """The body type ``scale`` times, never under the least the view allows (11 px, or the
        presentation floor): the chips and captions are drawn a little smaller than the body."""
        font = QFont(self.font().family())
        least = max(LEAST_PX, self.type_floor_px)
        font.setPixelSize(max(math.ceil(least), round(self.text_px * scale)))
        font.setBold(bold)
        return font

    def _notes_height(self, width: float) -> float:
        if self.stage is None or not self.stage.notes:
            return 0.0
        metrics = QFontMetrics(self._font(0.85))
        flags = Qt.TextFlag.TextWordWrap
        return sum(metrics.boundingRect(0, 0, int(width), 10_000, flags, f"• {n}").height() + 4
                   for n in self.stage.notes)

    def _caption(self, block: Block) -> str:
        if block.name in self.matrices and self.matrix_note:
            return f"{self.matrix_note}\n{block.caption}"
        return block.caption

    def _captions_height(self, width: float) -> float:
        """The tallest caption, wrapped to a column ``width`` wide."""
        metrics = QFontMetrics(self._font(0.85))
        flags = Qt.TextFlag.TextWordWrap
        return max((metrics.boundingRect(0, 0, max(1, int(width)), 10_000, flags, self._caption(b)).height()
                    for b in self.blocks), default=0)

    def shown_words(self) -> tuple[bool, bool]:
        """Whether the notes, and the captions, are drawn: a pane too short for them and
        the blocks (a laptop's, over the RoPE plot) puts them on its hover instead, notes first,
        rather than drawing them past its edge."""
        return self._fit()[0]

    def _fit(self) -> tuple[tuple[bool, bool], float]:
        """What is drawn (notes, captions) and the height left for the blocks."""
        pad = self.text_px
        width, height = self.width() - 2 * pad, self.height() - 2 * pad
        n = max(1, len(self.blocks))
        col_w = (width - 1.5 * self.text_px * (n - 1)) / n
        chip_m = QFontMetrics(self._font(0.9, True))
        fixed = (QFontMetrics(self._font(1.15, True)).height() + 8
                 + self._chip_lines(col_w) * (chip_m.height() + 7) + 6 + NOTES_GAP)
        notes, captions = self._notes_height(width), self._captions_height(col_w)
        for shown in ((True, True), (False, True), (False, False)):
            room = height - fixed - notes * shown[0] - captions * shown[1]
            if room >= 2 * self.text_px:
                break
        return shown, room

    def _chip_lines(self, col_w: float) -> int:
        """The most lines a block's chips take, wrapped to a column ``col_w`` wide."""
        return max((len(self._chip_rows(block, col_w)[1]) for block in self.blocks), default=1)

    def _chip_rows(self, block: Block, col_w: float) -> tuple[list, set]:
        """(label, width, line, x) of each chip, wrapped to the column, and the lines used."""
        chip_m = QFontMetrics(self._font(0.9, True))
        line, x, chips = 0, 0.0, []
        for dim, size in block.chips:
            w = chip_m.horizontalAdvance(f"{dim} {size:,}") + 10
            if x > 0 and x + w > col_w:
                line, x = line + 1, 0.0
            chips.append((f"{dim} {size:,}", w, line, x))
            x += w + 4
        return chips, {c[2] for c in chips} or {0}

    def hover_words(self) -> str:
        """What the pane left off for lack of height, for its tooltip."""
        if self.stage is None:
            return ""
        notes, captions = self.shown_words()
        said = [] if captions else [f"{b.name}: {self._caption(b)}" for b in self.blocks]
        if not notes and self.stage is not None:
            said += [f"• {n}" for n in self.stage.notes]
        return "\n".join(said)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.setToolTip(self.hover_words())

    def placed(self) -> list[Placed]:
        """Each block in its column: name on top, body, chips wrapped to the column, caption."""
        if not self.blocks:
            return []
        pad = self.text_px
        width, height = self.width() - 2 * pad, self.height() - 2 * pad
        gap = 1.5 * self.text_px
        n = len(self.blocks)
        col_w = (width - gap * (n - 1)) / n
        name_h = QFontMetrics(self._font(1.15, True)).height()
        chip_m = QFontMetrics(self._font(0.9, True))
        chip_h = chip_m.height() + 4
        cap_h = self._captions_height(col_w)
        rows = [self._chip_rows(block, col_w)[0] for block in self.blocks]
        most_lines = self._chip_lines(col_w)
        body_room = max(self._fit()[1], 2 * self.text_px)
        largest = max(max(b.width, b.height) for b in self.blocks)
        side_w = min(col_w, body_room * 1.6)
        placed = []
        for i, (block, chips) in enumerate(zip(self.blocks, rows, strict=True)):
            x = pad + i * (col_w + gap)
            column = QRectF(x, pad, col_w, height)
            if is_matrix(block):  # square cells, as large as the room allows
                (_, t), (_, s) = block.chips[-2:]
                cell = min(col_w / s, body_room / t)
                bw, bh = cell * s, cell * t
            else:
                bw = max(side_w * block.width / largest, min(col_w, 3 * self.text_px))
                bh = max(body_room * block.height / largest, 1.5 * self.text_px)
            top = pad + name_h + 8 + (body_room - bh) / 2
            body = QRectF(x + (col_w - bw) / 2, top, bw, bh)
            chip_top = pad + name_h + 8 + body_room + 6
            line_w = {}  # each line of chips centred in the column
            for _, w, line, cx in chips:
                line_w[line] = cx + w
            chip_rects = tuple((text, QRectF(x + (col_w - line_w[line]) / 2 + cx,
                                             chip_top + line * (chip_h + 3), w, chip_h))
                               for text, w, line, cx in chips)
            caption_top = chip_top + most_lines * (chip_h + 3) + 2
            placed.append(Placed(block, column, QRectF(x, pad, col_w, name_h), body, chip_rects,
                                 QRectF(x, caption_top, col_w, cap_h)))
        return placed

    # painting ---------------------------------------------------------------------------------
    def _words(self) -> list[Words]:
        """Every text it draws, where and how: what paintEvent draws and drawn_texts reports."""
        if self.stage is None:
            return []
        text = self.palette().windowText().color()
        words = []
        shown_notes, shown_captions = self.shown_words()
        centred = Qt.AlignmentFlag.AlignHCenter
        for item in self.placed():
            block = item.block
            words.append(Words(block.name, item.name, centred | Qt.AlignmentFlag.AlignBottom,
                               self._font(1.15, True), text))
            for label, rect in item.chips:
                fill = QColor(chip_color(label.split(" ")[0]))
                words.append(Words(label, rect, Qt.AlignmentFlag.AlignCenter, self._font(0.9, True),
                                   QColor(ink_on(fill.name())), fill))
            if shown_captions:
                words.append(Words(self._caption(block), item.caption, centred | Qt.AlignmentFlag.AlignTop
                                   | Qt.TextFlag.TextWordWrap, self._font(0.85), text))
        if self.stage.notes and shown_notes:
            pad = self.text_px
            width = self.width() - 2 * pad
            font = self._font(0.85)
            metrics = QFontMetrics(font)
            y = self.height() - pad - self._notes_height(width)
            for note in self.stage.notes:
                line = f"• {note}"
                h = metrics.boundingRect(0, 0, int(width), 10_000, Qt.TextFlag.TextWordWrap, line).height()
                words.append(Words(line, QRectF(pad, y, width, h), Qt.TextFlag.TextWordWrap, font, text))
                y += h + 4
        return words

    def paintEvent(self, _event) -> None:  # Qt's API
        if self.stage is None:
            return
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        text = self.palette().windowText().color()
        for item in self.placed():
            self._draw_body(p, text, item)
        for words in self._words():
            if words.ground is not None:  # a chip: its plate, then its label
                p.setPen(Qt.PenStyle.NoPen)
                p.setBrush(words.ground)
                p.drawRoundedRect(words.box, 4, 4)
            p.setFont(words.font)
            p.setPen(words.ink)
            p.drawText(words.box, words.flags, words.text)
        p.end()

    def _draw_body(self, p: QPainter, text: QColor, item: Placed) -> None:
        block = item.block
        image = self.matrices.get(block.name)
        if image is not None:
            p.drawImage(item.body, image)
            p.setBrush(Qt.BrushStyle.NoBrush)
        else:
            fill = QColor(chip_color(block.chips[-1][0]) if block.chips else "#7F7F7F")
            fill.setAlpha(90 if block.allocates else 35)
            p.setBrush(fill)
        p.setPen(QPen(text, 2.0, Qt.PenStyle.SolidLine if block.allocates else Qt.PenStyle.DashLine))
        p.drawRect(item.body)

    # what is drawn, for the picture checks (qt/picture.py) -------------------------------------
    def _to_window(self, rect: QRectF) -> QRectF:
        return QRectF(rect).translated(QPointF(self.mapTo(self.window(), QPoint(0, 0))))

    def drawn_texts(self) -> list[DrawnText]:
        seen = seen_rect(self)
        page = self.palette().window().color()
        texts = []
        for words in self._words():
            metrics = QFontMetricsF(words.font)
            # drawText clips to its box: what lies outside it is cut
            ink = metrics.boundingRect(words.box, int(words.flags), words.text)
            texts.append(DrawnText(words.text, self._to_window(ink), words.font.pixelSize(), words.ink,
                                   "stage", self._to_window(words.box).intersected(seen),
                                   words.ground or page))
        return texts

    def drawn_shapes(self) -> list[DrawnShape]:
        label_px = self._font(0.9).pixelSize()
        shapes = []
        for item in self.placed():
            matrix = item.block.name in self.matrices
            shapes.append(DrawnShape(self._to_window(item.body), "stage", item.block.name,
                                     "map" if matrix else "tensor", label_px,
                                     ("query", "key") if matrix else ("", "")))
        return shapes


@dataclass(frozen=True)
class Words:
    """A text the generic view draws: in ``box`` with ``flags`` (drawText's), on ``ground``
    (a chip's plate) or on the page."""

    text: str
    box: QRectF
    flags: Qt.AlignmentFlag
    font: QFont
    ink: QColor
    ground: QColor | None = None
