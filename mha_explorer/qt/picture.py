"""What a view has drawn, as the picture checks read it: every text and every tensor with its
rectangle in the window, its type size and its colours.

A view that draws its own words (the stage diagram, a heatmap with its axes and colour bar) lists
them through ``drawn_texts`` and its tensors or maps through ``drawn_shapes``; the checks then
walk the window and assert that no text sits on another text or on a tensor, nothing is cut by
its view, the type is large enough for the mode and every text stands out from its ground.
Plain widgets (labels, buttons) are read from Qt itself and need nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from PySide6.QtCore import QPoint, QPointF, QRectF
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QWidget

ShapeKind = Literal["tensor", "map", "plot"]


@dataclass(frozen=True)
class DrawnText:
    """One run of text as it appears on screen (window coordinates, device-independent px)."""

    text: str
    rect: QRectF  # the ink's box in the top-level window's coordinates
    pixel_size: float  # the type's em height in px, as the mode's smallest size is measured
    ink: QColor
    owner: str  # who drew it, for messages: "diagram", "heads: head 3", "colour bar"
    clip: QRectF  # the visible part of the view it is drawn in: the text must lie inside
    ground: QColor | None = None  # what is behind it when the view knows; else read from a grab
    role: str = ""  # what the words claim, where a check can hold them to it ("rows", "columns")
    on: str = ""  # the shape it is drawn on by design (a block's own tag, a cell's number, a legend)
    of: str = ""  # the shape whose axis it names, for ``role``; "" for every map of its area
    unit: str = ""  # the pieces of one text drawn as one (a label and its number) share this
    turned: bool = False  # drawn upright (a column's name): it reads down, not along a line


@dataclass(frozen=True)
class DrawnShape:
    """A tensor, map or plot: the main thing of a picture, which no text may cover."""

    rect: QRectF  # window coordinates
    owner: str
    name: str
    kind: ShapeKind = "tensor"
    label_px: float = 0.0  # the type size of its own label (a tensor is never smaller than it)
    # what its rows and its columns are, in core.display.head_maps.MapAxes's kinds ("query",
    # "key", "feature", "head_dim", ...)
    axes: tuple[str, str] = ("", "")


@runtime_checkable
class Pictured(Protocol):
    """A view whose texts and shapes the picture checks can list."""

    def drawn_texts(self) -> list[DrawnText]: ...

    def drawn_shapes(self) -> list[DrawnShape]: ...


def seen_rect(widget: QWidget) -> QRectF:
    """The part of ``widget`` in sight, in its window's coordinates: its own rect cut by each
    of its parents' (a scroll area's viewport cuts what is scrolled away)."""
    window = widget.window()
    seen = QRectF(widget.rect()).translated(QPointF(widget.mapTo(window, QPoint(0, 0))))
    parent = widget.parentWidget()
    while parent is not None and parent is not window.parentWidget():
        seen = seen.intersected(QRectF(parent.rect()).translated(QPointF(parent.mapTo(window, QPoint(0, 0)))))
        if parent is window:
            break
        parent = parent.parentWidget()
    return seen
