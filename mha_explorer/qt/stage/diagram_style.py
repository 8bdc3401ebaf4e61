"""Sizes, fonts and colours of the stage diagram, in one place.

The diagram is drawn for a classroom projector: type at 14 pt and up, ink that
reaches 7:1 on its page in either theme, the named dims in the colours of
``dim_colors`` everywhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtGui import QColor, QFont

from mha_explorer.core.display import colors
from mha_explorer.core.display.colors import relative_dim_color
from mha_explorer.qt.shell.theme import LIGHT, DiagramColors

# type sizes in points; 14 pt is the smallest that reads from the back of a room
LABEL_PT = 15
CAPTION_PT = 16
NOTE_PT = 17
OPERATOR_PT = 28
SLICE_PT = 14
SMALLEST_PT = SLICE_PT  # the smallest type any stage draws at scale 1
_type_floor = [0.0]  # set by the diagram before it builds a stage (presentation: larger)


@dataclass(frozen=True)
class Ink:
    """The theme's diagram colours as QColors, handed to every stage layout and item."""

    background: QColor
    ink: QColor
    muted: QColor
    block_fill: QColor  # activations
    weight_fill: QColor  # learned weights
    result_fill: QColor  # the tensor a stage produces
    mask_fill: QColor
    mask_cover: QColor
    slice_tints: tuple[QColor, QColor]  # alternating head slices
    copy_red: QColor


def ink_for(colors: DiagramColors) -> Ink:
    return Ink(
        background=QColor(colors.background), ink=QColor(colors.ink), muted=QColor(colors.muted),
        block_fill=QColor(colors.block_fill), weight_fill=QColor(colors.weight_fill),
        result_fill=QColor(colors.result_fill), mask_fill=QColor(colors.mask_fill),
        mask_cover=QColor(colors.mask_cover),
        slice_tints=(QColor(colors.slice_tints[0]), QColor(colors.slice_tints[1])),
        copy_red=QColor(colors.copy_red),
    )


LIGHT_INK = ink_for(LIGHT.diagram)  # for items made outside a stage layout (tests, sizing)

MARGIN = 24
GAP = 14  # between a block and its labels
CHIP_SPACE_EMS = 0.3  # between chips side by side, a space of their type: 'B=2H=8' read as one
MIN_SIDE = 26  # no block side is drawn thinner than this, however small the dim...
MIN_SIDE_EMS = 1.25  # ...nor than this many ems of its labels' type: a tensor is no icon
MAX_HEADS_SHOWN = 4  # more heads are drawn as the first three, "…", and the last


def set_type_floor(points: float) -> None:
    """No diagram font is smaller than ``points`` (scene points) until set again: the
    diagram sets it before each build, so layouts measure what they draw. Type that
    is already larger keeps its size."""
    _type_floor[0] = max(0.0, float(points))


def type_floor() -> float:
    return _type_floor[0]


def label_points() -> float:
    """The size a tensor's labels (its dim chips) are drawn at now."""
    return max(LABEL_PT, _type_floor[0])


def font(points: float, bold: bool = False) -> QFont:
    f = QFont()
    f.setPointSizeF(max(points, _type_floor[0]))
    f.setBold(bold)
    return f


def dim_label(dim: str, size: int) -> str:
    """'T=8', 'D=4,096': the name and the real size, whatever size the block is drawn."""
    return f"{dim}={size:,}"


def shape_text(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def units(n: int) -> float:
    """Log-ish length of an axis of n elements: 8 -> 4, 64 -> 7, 512 -> 10.

    Sizes from 1 to 65,536 then fit one screen while a bigger dim still
    draws longer; the real number is always on the label.
    """
    return 1.0 + math.log2(max(1, n))


def chip_space() -> float:
    """The room between two chips side by side, in scene pixels, at the type drawn now."""
    return CHIP_SPACE_EMS * label_points() * 96 / 72


def min_side() -> float:
    """The thinnest a block is drawn now (its labels' type grows in presentation)."""
    return max(MIN_SIDE, MIN_SIDE_EMS * label_points() * 96 / 72)


def side(n: int, k: float) -> float:
    return max(min_side(), k * units(n))


def dim_qcolor(dim: str) -> QColor:
    return QColor(relative_dim_color(dim))  # latent attention's d_v as d_k, H·d_v as D


def text_on(fill: QColor) -> QColor:
    """Black or white, whichever reads better on ``fill`` (core.colors.ink_on)."""
    return QColor(colors.ink_on(fill.name()))


def group_color(group: int) -> QColor:
    return QColor(colors.group_color(group))


def shown_heads(count: int) -> list[int | None]:
    """Head indices to draw; None marks the '…' gap: 8 -> [0, 1, 2, None, 7]."""
    if count <= MAX_HEADS_SHOWN:
        return list(range(count))
    return [0, 1, 2, None, count - 1]
