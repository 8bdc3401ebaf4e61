"""The few kinds of item the stage diagram is drawn with.

Every item is top-level in the scene and carries three plain attributes the
transition reads: ``key`` (the same thing in two stages has the same key, so it
slides from one place to the other), ``origin`` (where a new thing grows from)
and ``content`` (when it differs between two stages, the item cross-fades).
Blocks and grids can change size, so a morph can stretch them smoothly.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QFontMetricsF,
    QImage,
    QPainter,
    QPainterPath,
    QPen,
    QPolygonF,
    QTransform,
)
from PySide6.QtWidgets import QGraphicsItem, QGraphicsSimpleTextItem, QGraphicsTextItem

from mha_explorer.qt.picture_items import document_pieces
from mha_explorer.qt.stage import diagram_style as style

EDGE = 6  # width of the coloured bar that names a block's axis
SHADOW_STEP = 9  # offset of each layer behind a block (batch, heads)


def _tag(item, key: str, origin: str | None, content) -> None:
    item.key, item.origin, item.content = key, origin, content


@dataclass(frozen=True)
class Run:
    """One run of text an item draws, in the item's own coordinates: what the picture
    checks read (qt/picture.py) and what the composer keeps clear of other items."""

    text: str
    rect: QRectF
    points: float  # its type size in scene points
    ink: QColor
    ground: QColor | None = None  # what it is drawn on; None: the page


def _points(font) -> float:
    return font.pointSizeF()


class _SizedItem(QGraphicsItem):
    """An item drawn in a w × h box that the motion code can resize."""

    _w: float
    _h: float

    def size(self) -> tuple[float, float]:
        return self._w, self._h

    def set_size(self, w: float, h: float) -> None:
        if (w, h) != (self._w, self._h):
            self.prepareGeometryChange()
            self._w, self._h = w, h


class BlockItem(_SizedItem):
    """A tensor (or a slice of one) as a rectangle whose left and top edges carry
    the colours of its row and column dims; ``layers`` shadows stand for the
    leading dims (batch, heads) stacked behind it."""

    def __init__(self, key: str, w: float, h: float, *, fill: QColor, left: QColor | None = None,
                 top: QColor | None = None, layers: int = 0, layer_color: QColor | None = None,
                 tag: str = "", tag_color: QColor | None = None, outline: QColor | None = None,
                 origin: str | None = None, ink: style.Ink = style.LIGHT_INK, part: bool = False) -> None:
        super().__init__()
        _tag(self, key, origin, None)
        # the type its labels take (a slice of a tensor, ``part``, has none of its own)
        self.label_points = 0.0 if part else style.label_points()
        self._w, self._h = w, h
        self._fill, self._left, self._top = fill, left, top
        self._layers = layers
        self._ink = ink
        self._layer_color = layer_color or ink.muted
        self._tag = tag
        self._tag_color = tag_color or ink.ink
        self._outline = outline or ink.ink
        self._tag_font = style.font(style.SLICE_PT, bold=True)

    def boundingRect(self) -> QRectF:
        lift = SHADOW_STEP * self._layers
        return QRectF(-2, -2 - lift, self._w + 4 + lift, self._h + 4 + lift)

    def body(self) -> QRectF:
        """What it covers on the page: the block and the layers stacked behind it."""
        lift = SHADOW_STEP * self._layers
        return QRectF(0, -lift, self._w + lift, self._h + lift)

    def _tag_fits(self) -> bool:
        metrics = QFontMetricsF(self._tag_font)
        return bool(self._tag) and (metrics.horizontalAdvance(self._tag) + 2 * EDGE <= self._w
                                    and metrics.height() + EDGE <= self._h)

    def runs(self) -> list[Run]:
        """Its tag, where it is drawn (on the block itself)."""
        if not self._tag_fits():
            return []
        metrics = QFontMetricsF(self._tag_font)
        rect = QRectF(EDGE + 4, EDGE + 2, metrics.horizontalAdvance(self._tag), metrics.height())
        return [Run(self._tag, rect, _points(self._tag_font), self._tag_color, self._fill)]

    def paint(self, painter: QPainter, _option, _widget=None) -> None:
        w, h = self._w, self._h
        for i in range(self._layers, 0, -1):
            painter.setPen(QPen(self._layer_color, 1.5))
            painter.setBrush(QBrush(self._ink.background))
            painter.drawRect(QRectF(i * SHADOW_STEP, -i * SHADOW_STEP, w, h))
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QBrush(self._fill))
        painter.drawRect(QRectF(0, 0, w, h))
        if self._left is not None:
            painter.setBrush(QBrush(self._left))
            painter.drawRect(QRectF(0, 0, min(EDGE, w / 3), h))
        if self._top is not None:
            painter.setBrush(QBrush(self._top))
            painter.drawRect(QRectF(0, 0, w, min(EDGE, h / 3)))
        painter.setPen(QPen(self._outline, 2 if self._outline != self._ink.ink else 1.5))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawRect(QRectF(0, 0, w, h))
        if self._tag_fits():
            metrics = QFontMetricsF(self._tag_font)
            painter.setFont(self._tag_font)
            painter.setPen(self._tag_color)
            painter.drawText(QPointF(EDGE + 4, EDGE + metrics.ascent() + 2), self._tag)


class GapItem(_SizedItem):
    """The heads not drawn, between those that are: a dotted gap, its count said by the
    heads' chip (a word here would sit on the tensor)."""

    def __init__(self, key: str, w: float, h: float, *, ink: style.Ink = style.LIGHT_INK,
                 origin: str | None = None) -> None:
        super().__init__()
        _tag(self, key, origin, None)
        self._w, self._h = w, h
        self._ink = ink

    def boundingRect(self) -> QRectF:
        return QRectF(-1, -1, self._w + 2, self._h + 2)

    def body(self) -> QRectF:
        return QRectF(0, 0, self._w, self._h)

    def paint(self, painter: QPainter, _option, _widget=None) -> None:
        pen = QPen(self._ink.muted, 1.5, Qt.PenStyle.DashLine)
        painter.setPen(pen)
        painter.setBrush(QBrush(self._ink.background))
        painter.drawRect(QRectF(0, 0, self._w, self._h))
        r = max(1.5, min(self._w / 14, self._h / 6, 5.0))  # three dots across its middle
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QBrush(self._ink.muted))
        for i in (-1, 0, 1):
            painter.drawEllipse(QPointF(self._w / 2 + i * 3.5 * r, self._h / 2), r, r)


class ChipItem(QGraphicsItem):
    """A dim name and size ('T=8') on a rounded chip of the dim's colour."""

    PAD_X, PAD_Y = 8, 3

    def __init__(self, key: str, text: str, fill: QColor, *, points: float = style.LABEL_PT,
                 origin: str | None = None) -> None:
        super().__init__()
        _tag(self, key, origin, text)
        self._text, self._fill = text, fill
        self._set_font(style.font(points, bold=True))
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)

    def _set_font(self, font) -> None:
        self._font = font
        metrics = QFontMetricsF(font)
        self._rect = QRectF(0, 0, metrics.horizontalAdvance(self._text) + 2 * self.PAD_X,
                            metrics.height() + 2 * self.PAD_Y)
        self._ascent = metrics.ascent()

    def set_points(self, points: float) -> None:
        """Its type this size (the composer makes a crowded label smaller)."""
        self.prepareGeometryChange()
        font = QFont(self._font)
        font.setPointSizeF(points)
        self._set_font(font)

    def text(self) -> str:
        return self._text

    def font(self):
        return self._font

    def runs(self) -> list[Run]:
        """The chip as one run: its plate hides whatever it lies on."""
        return [Run(self._text, QRectF(self._rect), _points(self._font), style.text_on(self._fill),
                    self._fill)]

    def boundingRect(self) -> QRectF:
        return self._rect.adjusted(-1, -1, 1, 1)

    def paint(self, painter: QPainter, _option, _widget=None) -> None:
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QBrush(self._fill))
        painter.drawRoundedRect(self._rect, 6, 6)
        painter.setFont(self._font)
        painter.setPen(style.text_on(self._fill))
        painter.drawText(QPointF(self.PAD_X, self.PAD_Y + self._ascent), self._text)


class TextItem(QGraphicsSimpleTextItem):
    """A caption, an operator sign or a short note on one or more lines."""

    def __init__(self, key: str, text: str, *, points: float = style.CAPTION_PT, bold: bool = False,
                 color: QColor | None = None, origin: str | None = None) -> None:
        super().__init__(text)
        _tag(self, key, origin, text)
        self.setFont(style.font(points, bold))
        self.setBrush(QBrush(color or style.LIGHT_INK.ink))
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)

    def set_points(self, points: float) -> None:
        font = QFont(self.font())
        font.setPointSizeF(points)
        self.setFont(font)

    def runs(self) -> list[Run]:
        """One run per line (Qt sets the lines left-aligned, one pitch apart)."""
        lines = self.text().split("\n")
        pitch = self.boundingRect().height() / len(lines)
        metrics = QFontMetricsF(self.font())
        return [Run(line, QRectF(0, i * pitch, metrics.horizontalAdvance(line), pitch),
                    _points(self.font()), self.brush().color())
                for i, line in enumerate(lines) if line.strip()]


class NoteItem(QGraphicsTextItem):
    """A sentence that wraps to ``width``: what the stage means, in words."""

    def __init__(self, key: str, text: str, width: float, *, points: float = style.NOTE_PT,
                 color: QColor | None = None, html: bool = False) -> None:
        super().__init__()
        self.setFont(style.font(points))
        self.setDefaultTextColor(color or style.LIGHT_INK.ink)
        if html:
            self.setHtml(text)
        else:
            self.setPlainText(text)
        self.setTextWidth(width)
        _tag(self, key, None, self.toPlainText())
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)

    def text(self) -> str:
        return self.toPlainText()

    def set_points(self, points: float) -> None:
        font = QFont(self.font())
        font.setPointSizeF(points)
        self.setFont(font)

    def runs(self) -> list[Run]:
        """Each line's pieces of one format (a coloured number in the strides note is a piece
        on its own ground), as the document laid them out."""
        return [Run(p.text, p.rect, p.points, p.ink, p.ground) for p in document_pieces(self)]


class LineItem(QGraphicsItem):
    """A thin connector (from an input to the rows it feeds, from a group to its heads)."""

    def __init__(self, key: str, points: list[QPointF], color: QColor | None = None,
                 width: float = 2.0) -> None:
        super().__init__()
        _tag(self, key, None, None)
        self._path = QPainterPath(points[0])
        for p in points[1:]:
            self._path.lineTo(p)
        self._pen = QPen(color or style.LIGHT_INK.muted, width)

    def path(self) -> QPainterPath:
        """The connector in item coordinates (what it draws, not its bounding box)."""
        return QPainterPath(self._path)

    def boundingRect(self) -> QRectF:
        return self._path.boundingRect().adjusted(-3, -3, 3, 3)

    def paint(self, painter: QPainter, _option, _widget=None) -> None:
        painter.setPen(self._pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawPath(self._path)


class GridItem(_SizedItem):
    """A T×S matrix of one head: cell colours from the trace when it is small
    enough to see, hidden (masked) cells hatched, rows and columns edged in
    the colours of T and S."""

    def __init__(self, key: str, w: float, h: float, rows: int, cols: int, *,
                 image: QImage | None, hidden_from: list[int] | None, content: str,
                 left: QColor, top: QColor, origin: str | None = None,
                 ink: style.Ink = style.LIGHT_INK) -> None:
        super().__init__()
        _tag(self, key, origin, content)
        self.label_points = style.label_points()
        self._ink = ink
        self._w, self._h = w, h
        self._rows, self._cols = rows, cols
        self._image = image
        # hidden_from[i]: the first hidden column of row i (cols when the row sees every key)
        self._mask = None if hidden_from is None else self._staircase(hidden_from, cols)
        self._left, self._top = left, top

    def has_values(self) -> bool:
        """True when the cells are coloured from the trace, not just outlined."""
        return self._image is not None

    def boundingRect(self) -> QRectF:
        return QRectF(-EDGE - 2, -EDGE - 2, self._w + EDGE + 4, self._h + EDGE + 4)

    def body(self) -> QRectF:
        """The cells and the coloured edges that name its axes."""
        return QRectF(-EDGE, -EDGE, self._w + EDGE, self._h + EDGE)

    @staticmethod
    def _staircase(hidden_from: list[int], cols: int) -> QPolygonF:
        """The hidden cells as one polygon in cell units: row i is hidden from
        column hidden_from[i] to the end, so the outline steps down row by row."""
        points = [QPointF(cols, 0)]
        for i, first in enumerate(hidden_from):
            points += [QPointF(first, i), QPointF(first, i + 1)]
        points.append(QPointF(cols, len(hidden_from)))
        return QPolygonF(points)

    def paint(self, painter: QPainter, _option, _widget=None) -> None:
        rect = QRectF(0, 0, self._w, self._h)
        painter.setPen(Qt.PenStyle.NoPen)
        if self._image is not None:
            painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, False)
            painter.drawImage(rect, self._image)
        else:
            painter.setBrush(QBrush(self._ink.block_fill))
            painter.drawRect(rect)
        cw, ch = self._w / self._cols, self._h / self._rows
        if self._mask is not None:
            mask = QTransform.fromScale(cw, ch).map(self._mask)
            painter.setBrush(QBrush(self._ink.mask_cover))
            painter.drawPolygon(mask)
            painter.setBrush(QBrush(self._ink.mask_fill, Qt.BrushStyle.BDiagPattern))
            painter.drawPolygon(mask)
        if min(cw, ch) >= 9:  # cell borders only where cells are big enough to tell apart
            painter.setPen(QPen(self._ink.background, 1))
            for j in range(1, self._cols):
                painter.drawLine(QPointF(j * cw, 0), QPointF(j * cw, self._h))
            for i in range(1, self._rows):
                painter.drawLine(QPointF(0, i * ch), QPointF(self._w, i * ch))
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QBrush(self._left))
        painter.drawRect(QRectF(-EDGE, 0, EDGE, self._h))
        painter.setBrush(QBrush(self._top))
        painter.drawRect(QRectF(0, -EDGE, self._w, EDGE))
        painter.setPen(QPen(self._ink.ink, 1.5))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawRect(rect)
