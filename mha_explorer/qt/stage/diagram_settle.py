"""Where each text of a stage's picture ends up: clear of the tensors, of the lines, of every
other text, and inside the canvas.

A stage's layout places its items where they belong; the Composer then settles its texts here,
one place for every stage and every variant. A text that is already clear stays. One that is
not moves to the nearest clear place (a dim's chip stays near its tensor; a sentence may go
wherever there is room); failing that it is set smaller, down to the mode's least type, and a
sentence is wrapped narrower; what still finds no room is a detail, and goes to a hover over
its picture. Each item says how it may be moved (``placement``):

- "move" (the default): anywhere within ``reach`` of where it was placed;
- "pin": where it is, or smaller there (a word naming a row of a grid, a row's sum);
- "fixed": never touched, only kept clear of (an operator sign between two tensors).

and whether it is a ``detail`` that may leave the picture for a hover.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QPainterPath, QPainterPathStroker
from PySide6.QtWidgets import QGraphicsItem

from mha_explorer.qt.stage import diagram_style as style
from mha_explorer.qt.stage.diagram_items import BlockItem, ChipItem, GapItem, GridItem, LineItem, NoteItem

CLEAR = 1.5  # scene pixels kept free between a text and a tensor or a line
TOUCH = 0.5  # scene pixels two texts may share: set edge to edge, they touch
SPACE_EMS = 0.3  # two texts on one line keep this much of their height between them
SHRINK = 0.9  # each smaller size tried is this much of the one before
NARROWER = 0.8  # each narrower width tried for a sentence
LEAST_WRAP_EM = 8  # a sentence is never wrapped narrower than this many ems
NEAR_EM = 3.0  # how far (in ems of its type) a label may move from where it was placed


def placement(item: QGraphicsItem) -> str:
    return getattr(item, "placement", "move")


def is_detail(item: QGraphicsItem) -> bool:
    return getattr(item, "detail", False)


def _em(item: QGraphicsItem) -> float:
    return item.font().pointSizeF() * 96 / 72


@dataclass
class Settled:
    """What settling did: the texts moved to a hover, by the shape they now hover over."""

    hovers: dict[QGraphicsItem, list[str]] = field(default_factory=dict)
    moved: int = 0


class _Page:
    """The items of one picture and the room between them."""

    def __init__(self, items: list[QGraphicsItem], canvas: QRectF) -> None:
        self.canvas = canvas
        self.items = items
        self.shapes = [i.sceneTransform().mapRect(i.body()) for i in items
                       if isinstance(i, BlockItem | GridItem | GapItem)]
        stroker = QPainterPathStroker()
        stroker.setWidth(4.0)
        self.lines: list[QPainterPath] = [i.sceneTransform().map(stroker.createStroke(i.path()))
                                          for i in items if isinstance(i, LineItem)]
        self.texts = [i for i in items if callable(getattr(i, "runs", None))
                      and not isinstance(i, BlockItem)]
        self._marks: dict[QGraphicsItem, QRectF] = {}

    def mark(self, item: QGraphicsItem) -> QRectF:
        """The scene rect its words take."""
        if item not in self._marks:
            rect = QRectF()
            for run in item.runs():
                rect = rect.united(item.sceneTransform().mapRect(run.rect))
            self._marks[item] = rect
        return self._marks[item]

    def changed(self, item: QGraphicsItem) -> None:
        self._marks.pop(item, None)

    def blocked(self, item: QGraphicsItem, rect: QRectF) -> bool:
        """Whether ``rect`` (``item``'s words, somewhere) leaves the canvas, comes within CLEAR
        of a tensor or a line, or lies on another text (words set edge to edge, as the names
        down a grid are, only touch)."""
        if not self.canvas.contains(rect):
            return True
        near = rect.adjusted(-CLEAR, -CLEAR, CLEAR, CLEAR)
        if any(near.intersects(shape) for shape in self.shapes):
            return True
        if any(line.intersects(near) for line in self.lines):
            return True
        chip = isinstance(item, ChipItem)
        across = chip or _plain(item)
        for other in self.texts:
            if other is item:
                continue
            there = self.mark(other)
            if _on(rect, there):
                return True
            if not across or not (_plain(other) or isinstance(other, ChipItem)):
                continue
            # two plates on one line keep a space of their type between them ('B=2H=8')
            plates = chip and isinstance(other, ChipItem)
            if _run_together(rect, there, style.chip_space() - TOUCH if plates else None):
                return True
        return False

    def clear(self, item: QGraphicsItem) -> bool:
        return not self.blocked(item, self.mark(item))

    def remove(self, item: QGraphicsItem) -> None:
        self.texts.remove(item)
        self.items.remove(item)
        self.changed(item)

    def move_near(self, item: QGraphicsItem, reach: float) -> bool:
        """Move ``item`` to the nearest clear place within ``reach``; False (unmoved) if none."""
        here = self.mark(item)
        for dx, dy in _offsets(max(3.0, _em(item) / 4), reach):
            if not self.blocked(item, here.translated(dx, dy)):
                item.moveBy(dx, dy)
                self.changed(item)
                return True
        return False


@functools.lru_cache(maxsize=64)
def _offsets(step: float, reach: float) -> tuple[tuple[float, float], ...]:
    """Places to try, nearest first: rings ``step`` apart close by, then each a quarter
    farther out (a sentence may go anywhere on the canvas), 16 directions on each, the
    straight ones first."""
    radii, r = [], step
    while r <= reach:
        radii.append(r)
        r = r + step if r < 8 * step else r * 1.25
    angles = sorted((2 * math.pi * i / 16 for i in range(16)),
                    key=lambda a: min(abs(math.cos(a)), abs(math.sin(a))))
    return tuple((r * math.cos(a), r * math.sin(a)) for r in radii for a in angles)


def _on(a: QRectF, b: QRectF) -> bool:
    shared = a.intersected(b)
    return shared.width() > TOUCH and shared.height() > TOUCH


def _plain(item: QGraphicsItem) -> bool:
    """Words on the page, read across (a chip's plate keeps its own room around its words;
    the key words turned up a grid's columns stand a column apart)."""
    return not isinstance(item, ChipItem) and item.rotation() == 0


def _run_together(a: QRectF, b: QRectF, space: float | None = None) -> bool:
    """Two texts on one line closer than a space (``space``, else SPACE_EMS of their
    height): 'A head 0' and 'context' read as one."""
    line = min(a.bottom(), b.bottom()) - max(a.top(), b.top())
    if line < 0.5 * min(a.height(), b.height()):
        return False
    gap = max(b.left() - a.right(), a.left() - b.right())
    return gap < (SPACE_EMS * min(a.height(), b.height()) if space is None else space)


def _smaller(item: QGraphicsItem, least: float) -> bool:
    """Set ``item`` one step smaller about its centre; False when it is at ``least`` already."""
    points = item.font().pointSizeF()
    if points <= least + 0.01:
        return False
    centre = item.sceneBoundingRect().center()
    item.set_points(max(least, points * SHRINK))
    item.moveBy(*(centre - item.sceneBoundingRect().center()).toTuple())
    return True


def _narrower(item: QGraphicsItem) -> bool:
    """Wrap a sentence narrower, keeping its top-left; False when it is as narrow as it goes."""
    if not isinstance(item, NoteItem):
        return False
    width = item.textWidth() if item.textWidth() > 0 else item.boundingRect().width()
    least = LEAST_WRAP_EM * _em(item)
    if width <= least + 1:
        return False
    item.setTextWidth(max(least, width * NARROWER))
    return True


def _try(page: _Page, item: QGraphicsItem) -> bool:
    """Clear where it is, or moved (as far as its placement lets it) to where it is."""
    page.changed(item)
    if page.clear(item):
        return True
    if placement(item) == "pin":
        return False
    reach = max(page.canvas.width(), page.canvas.height()) if isinstance(item, NoteItem) \
        else NEAR_EM * _em(item)
    return page.move_near(item, reach)


def settle(items: list[QGraphicsItem], canvas: QRectF, least_points: float) -> Settled:
    """Settle the texts of ``items`` (in place; items sent to a hover leave the list)."""
    page = _Page(items, canvas)
    done = Settled()
    order = sorted((i for i in page.texts if placement(i) != "fixed"),
                   key=lambda i: (is_detail(i), isinstance(i, NoteItem)))
    for item in order:
        if page.clear(item):
            continue
        start = item.pos()
        settled = _try(page, item)
        while not settled and (_smaller(item, least_points) or _narrower(item)):
            settled = _try(page, item)
        if settled:
            done.moved += item.pos() != start
            continue
        if is_detail(item):
            shape = _nearest_shape(page.items, item)
            done.hovers.setdefault(shape, []).append(item.text())
            page.remove(item)
    return done


def _nearest_shape(items: list[QGraphicsItem], item: QGraphicsItem) -> QGraphicsItem | None:
    centre = item.sceneBoundingRect().center()
    shapes = [i for i in items if isinstance(i, BlockItem | GridItem)]
    if not shapes:
        return None
    return min(shapes, key=lambda s: _distance(s.sceneBoundingRect(), centre))


def _distance(rect: QRectF, point: QPointF) -> float:
    dx = max(rect.left() - point.x(), 0.0, point.x() - rect.right())
    dy = max(rect.top() - point.y(), 0.0, point.y() - rect.bottom())
    return math.hypot(dx, dy)
