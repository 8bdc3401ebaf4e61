"""Checks on what views say they draw (qt/picture.py), held to the pixels of a grab where it
matters: no text on another text or on a map, none past its view, every one readable on
the ground it is drawn on."""

from __future__ import annotations

from collections import Counter

from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QWidget

from mha_explorer.core.display.colors import contrast_ratio
from mha_explorer.qt.picture import DrawnShape, DrawnText, Pictured

CONTRAST = 4.5  # WCAG AA for text, numbers on map cells included
OVERLAP_PX2 = 2.0  # two boxes sharing an edge's antialiasing are not text on text


def drawn(root: QWidget) -> tuple[list[DrawnText], list[DrawnShape]]:
    """Every text and shape the views under ``root`` say they draw."""
    views = [w for w in [root, *root.findChildren(QWidget)] if isinstance(w, Pictured) and w.isVisible()]
    return ([t for v in views for t in v.drawn_texts()], [s for v in views for s in v.drawn_shapes()])


def overlap(a: QRectF, b: QRectF) -> float:
    both = a.intersected(b)
    return max(both.width(), 0.0) * max(both.height(), 0.0)


def assert_nothing_collides(texts: list[DrawnText], shapes: list[DrawnShape]) -> None:
    for i, a in enumerate(texts):
        assert a.rect.width() > 0 and a.rect.height() > 0, a
        inside = a.clip.adjusted(-1, -1, 1, 1)
        assert inside.contains(a.rect), ("cut by its view", a.text, a.owner, a.rect, a.clip)
        for b in texts[i + 1:]:
            assert overlap(a.rect, b.rect) <= OVERLAP_PX2, ("text on text", a.text, b.text, a.owner)
        for shape in shapes:
            assert overlap(a.rect, shape.rect) <= OVERLAP_PX2, ("text on a map", a.text, shape.name)


def ground_in(image: QImage, rect: QRectF) -> QColor:
    """The colour most of ``rect`` has in ``image``: what a text there is drawn on."""
    r = rect.toAlignedRect().intersected(image.rect())
    counts = Counter(image.pixel(x, y) for x in range(r.left(), r.right() + 1)
                     for y in range(r.top(), r.bottom() + 1))
    return QColor.fromRgb(counts.most_common(1)[0][0])


def ink_contrast(image: QImage, rect: QRectF) -> float:
    """The contrast of the inkiest pixel in ``rect`` against the colour most of it has."""
    ground = ground_in(image, rect).name()
    r = rect.toAlignedRect().intersected(image.rect())
    inks = {QColor.fromRgb(image.pixel(x, y)).name() for x in range(r.left(), r.right() + 1)
            for y in range(r.top(), r.bottom() + 1)}
    return max(contrast_ratio(ink, ground) for ink in inks)
