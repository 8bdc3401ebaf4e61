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

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from mha_explorer.core.display.colors import dim_color, ink_on
from mha_explorer.core.stages.catalog import STAGES, StageId, is_stage
from mha_explorer.core.stages.records import Stage
from mha_explorer.core.units import format_bytes

MIN_SIDE, MAX_SIDE = 24.0, 150.0  # block sides in pixels, the log of the size in between
# latent attention's dims drawn in the colour of their MHA relative: the latents (what is
# cached, like Hkv's keys) in Hkv's, the per-head widths in d_k's
DIM_ALIASES = {"r_kv": "Hkv", "r_q": "Hkv", "d_n": "d_k", "d_r": "d_k", "d_v": "d_k",
               "d_n+d_r": "d_k", "H·(d_n+d_r)": "D", "H·(d_n+d_v)": "D", "H·d_v": "D", "H·r_kv": "D",
               "(r_kv+d_r)": "Hkv", "1": "Hkv"}


def chip_color(dim: str) -> str:
    return dim_color(DIM_ALIASES.get(dim, dim))


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


class GenericStageView(QWidget):
    """Public: ``set_stage(stage: Stage | None)``, ``stage`` (the Stage shown), ``blocks``
    (its Block list). Paints title, formula, explanation, notes and the tensor blocks."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("generic_stage")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumSize(420, 300)
        self.stage: Stage | None = None
        self.blocks: list[Block] = []

    def set_stage(self, stage: Stage | None) -> None:
        self.stage = stage
        self.blocks = stage_blocks(stage) if stage is not None else []
        self.setAccessibleName(stage.title if stage is not None else "no stage")
        self.update()

    def paintEvent(self, _event) -> None:  # Qt's API
        if self.stage is None:
            return
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        text = self.palette().windowText().color()
        y = self._texts(p, text)
        self._draw_blocks(p, text, y + 12)
        p.end()

    def _texts(self, p: QPainter, text: QColor) -> float:
        """Title, formula, explanation and notes, wrapped; returns the y below them."""
        stage, width, y = self.stage, self.width() - 24, 10.0
        for line, size, bold, mono in ((stage.title, 13, True, False), (stage.formula, 10, False, True),
                                       (stage.explanation, 9, False, False),
                                       *((f"• {n}", 9, False, False) for n in stage.notes)):
            font = QFont("monospace" if mono else self.font().family(), size)
            font.setBold(bold)
            p.setFont(font)
            p.setPen(text)
            rect = QFontMetrics(font).boundingRect(0, 0, int(width), 1000, Qt.TextFlag.TextWordWrap, line)
            p.drawText(QRectF(12, y, width, rect.height()), Qt.TextFlag.TextWordWrap, line)
            y += rect.height() + 4
        return y

    def _draw_blocks(self, p: QPainter, text: QColor, top: float) -> None:
        x, row_height = 14.0, 0.0
        chip_font = QFont(self.font().family(), 8)
        for block in self.blocks:
            w = max(block.width, 90.0)
            if x + w > self.width() - 10 and x > 14:
                x, top, row_height = 14.0, top + row_height + 16, 0.0
            fill = QColor(chip_color(block.chips[-1][0]) if block.chips else "#7F7F7F")
            fill.setAlpha(70 if block.allocates else 25)
            pen = QPen(text, 1.5, Qt.PenStyle.SolidLine if block.allocates else Qt.PenStyle.DashLine)
            p.setPen(pen)
            p.setBrush(fill)
            body = QRectF(x, top + 16, block.width, block.height)
            p.drawRect(body)
            p.setFont(QFont(self.font().family(), 10, QFont.Weight.Bold))
            p.drawText(QRectF(x, top, w, 16), Qt.AlignmentFlag.AlignLeft, block.name)
            cy = body.bottom() + 4
            p.setFont(chip_font)
            cx = x
            for dim, size in block.chips:
                label = f"{dim} {size:,}"
                cw = QFontMetrics(chip_font).horizontalAdvance(label) + 8
                chip = QRectF(cx, cy, cw, 14)
                p.setPen(Qt.PenStyle.NoPen)
                p.setBrush(QColor(chip_color(dim)))
                p.drawRoundedRect(chip, 4, 4)
                p.setPen(QColor(ink_on(chip_color(dim))))
                p.drawText(chip, Qt.AlignmentFlag.AlignCenter, label)
                cx += cw + 3
            p.setPen(text)
            p.drawText(QRectF(x, cy + 16, max(w, cx - x), 14), Qt.AlignmentFlag.AlignLeft, block.caption)
            x += max(w, cx - x) + 18
            row_height = max(row_height, 16 + block.height + 4 + 14 + 16 + 14)
