"""Reading the texts that graphics items draw, for the picture checks (qt/picture.py).

A QGraphicsTextItem lays its document out in lines, each in pieces of one format (a coloured
number is a piece of its own, on its own ground); a pyqtgraph axis draws its tick labels in its
paint. Both are read here as they are drawn, in the window's coordinates, so that a view made
of graphics items (a plot, a map with axes) lists its words without repeating its layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QPoint, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPicture
from PySide6.QtWidgets import QGraphicsItem, QGraphicsTextItem, QGraphicsView

from mha_explorer.qt.picture import DrawnText, seen_rect


@dataclass(frozen=True)
class Piece:
    """A run of one format on one line of a text item, in the item's coordinates."""

    text: str
    rect: QRectF
    points: float
    ink: QColor
    ground: QColor | None  # its own background; None: whatever is behind the item


def _color(brush: QBrush, otherwise: QColor | None) -> QColor | None:
    return otherwise if brush.style() == Qt.BrushStyle.NoBrush else brush.color()


def font_points(font: QFont, dpi: float = 96.0) -> float:
    """A font's size in points, whether it was set in points or in pixels."""
    return font.pointSizeF() if font.pointSizeF() > 0 else font.pixelSize() * 72 / dpi


def document_pieces(item: QGraphicsTextItem) -> list[Piece]:
    """Each line's pieces of one format, as the item's document laid them out."""
    pieces = []
    block = item.document().begin()
    while block.isValid():
        layout = block.layout()
        at = layout.position()
        formats = []
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            formats.append((fragment.position() - block.position(), fragment.length(),
                            fragment.charFormat()))
            it += 1
        for i in range(layout.lineCount()):
            line = layout.lineAt(i)
            start, end = line.textStart(), line.textStart() + line.textLength()
            for first, length, fmt in formats:
                a, b = max(first, start), min(first + length, end)
                words = block.text()[a:b].replace("\u2028", " ").strip()
                if a >= b or not words:
                    continue
                x0, x1 = line.cursorToX(a)[0], line.cursorToX(b)[0]
                rect = QRectF(at.x() + min(x0, x1), at.y() + line.y(), abs(x1 - x0), line.height())
                points = fmt.fontPointSize() or font_points(item.font())
                pieces.append(Piece(words, rect, points, _color(fmt.foreground(), item.defaultTextColor()),
                                    _color(fmt.background(), None)))
        block = block.next()
    return pieces


def _shown(item: QGraphicsItem) -> bool:
    return item.isVisible() and item.effectiveOpacity() > 0.1


def _within(item: QGraphicsItem, parents: dict) -> str:
    """The name of the first of ``parents`` that ``item`` is drawn inside, else ""."""
    while item is not None:
        for parent, name in parents.items():
            if item is parent:
                return name
        item = item.parentItem()
    return ""


class SceneReader:
    """Maps a graphics view's items to the window, for ``texts``."""

    def __init__(self, view: QGraphicsView, owner: str) -> None:
        self.view, self.owner = view, owner
        port = view.viewport()
        self._offset = port.mapTo(view.window(), QPoint(0, 0))
        self.clip = seen_rect(port)
        self._dpi = port.logicalDpiY()

    def rect(self, item: QGraphicsItem, rect: QRectF) -> QRectF:
        """``rect`` in ``item``'s coordinates, in the window's."""
        on_view = item.deviceTransform(self.view.viewportTransform()).mapRect(rect)
        return on_view.translated(self._offset)

    def _px(self, item: QGraphicsItem, points: float) -> float:
        """Type of ``points`` drawn by ``item`` as pixels on screen (its scale included)."""
        t = item.deviceTransform(self.view.viewportTransform())
        return points * self._dpi / 72 * math.sqrt(abs(t.determinant()))

    def texts(self, on: dict | None = None) -> list[DrawnText]:
        """Every text item's pieces and every axis's tick labels in the scene; a text drawn
        inside one of ``on`` (item -> shape name) lies on that shape by design."""
        from pyqtgraph import AxisItem  # the plots' axes; pyqtgraph is loaded with them

        on = on or {}
        texts = []
        for item in self.view.scene().items():
            if not _shown(item):
                continue
            if isinstance(item, QGraphicsTextItem):
                where = _within(item, on)
                for piece in document_pieces(item):  # one item's pieces are read together
                    texts.append(DrawnText(piece.text, self.rect(item, piece.rect),
                                           self._px(item, piece.points), piece.ink, self.owner,
                                           self.clip, piece.ground, on=where, unit=str(id(item))))
            elif isinstance(item, AxisItem):
                texts += self._ticks(item)
        return texts

    def _ticks(self, axis) -> list[DrawnText]:
        """The tick labels as the axis draws them: clipped to its own box."""
        picture = QPicture()
        painter = QPainter(picture)
        font = axis.style["tickFont"] or self.view.font()
        painter.setFont(font)
        try:
            specs = axis.generateDrawSpecs(painter)
        finally:
            painter.end()
        if specs is None:
            return []
        metrics = QFontMetricsF(font)
        box = self.rect(axis, axis.boundingRect()).intersected(self.clip)
        ink = axis.textPen().color()
        px = self._px(axis, font_points(font, self._dpi))
        return [DrawnText(text, self.rect(axis, metrics.boundingRect(rect, int(flags), text)), px, ink,
                          self.owner, box) for rect, flags, text in specs[2]]
