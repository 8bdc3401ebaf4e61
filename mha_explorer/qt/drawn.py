"""The words and maps a heatmap view paints itself, as qt/picture.py records them: each in the
window's coordinates, with its type size and colours, for the checks of every picture.

pyqtgraph paints tick labels and axis titles inside a graphics view, where Qt's own widgets
cannot be read; these helpers ask the axis what it draws (the same specs its paint uses) and
map each box out of the scene to the window.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontInfo, QFontMetricsF, QPainter, QPalette, QPicture
from PySide6.QtWidgets import QGraphicsItem, QGraphicsView, QWidget

from mha_explorer.qt.picture import DrawnShape, DrawnText


def em_px(font: QFont) -> float:
    """The type's em height in pixels, as the mode's smallest size is measured."""
    return float(QFontInfo(font).pixelSize())


def ground_of(widget: QWidget) -> QColor:
    """What a view's own words are drawn on: its window colour (the views paint no background)."""
    return widget.palette().color(QPalette.ColorRole.Window)


def in_window(widget: QWidget, rect: QRectF) -> QRectF:
    """``rect`` (in ``widget``'s pixels) in the coordinates of its top-level window."""
    origin = widget.mapTo(widget.window(), QPoint(0, 0))
    return QRectF(rect).translated(QPointF(origin))


def visible_part(widget: QWidget) -> QRectF:
    """The part of ``widget`` that is on screen (a scroll area may hide the rest), in window
    coordinates; empty when none is. A graphics view's is its viewport's, which covers it."""
    if isinstance(widget, QGraphicsView):
        widget = widget.viewport()
    return in_window(widget, QRectF(widget.visibleRegion().boundingRect()))


def item_in_window(view: QGraphicsView, item: QGraphicsItem, rect: QRectF) -> QRectF:
    """``rect`` in ``item``'s coordinates, as drawn in ``view``, in window coordinates."""
    scene_rect = item.mapRectToScene(rect)
    return in_window(view.viewport(), QRectF(view.mapFromScene(scene_rect).boundingRect()))


def text_ink(font: QFont, box: QRectF, flags: int, text: str) -> QRectF:
    """Where the ink of ``text`` lies when drawn in ``box`` with ``flags``."""
    return QFontMetricsF(font).boundingRect(box, flags, text)


def axis_texts(axis, view: QGraphicsView, owner: str, ground: QColor | None = None,
               role: str = "") -> list[DrawnText]:
    """The tick labels a pyqtgraph axis paints in ``view`` (none when it is hidden)."""
    if not axis.isVisible() or axis.scene() is None:
        return []
    font = QFont(axis.style["tickFont"] or QFont())  # a picture's painter starts with the app's
    picture = QPicture()
    painter = QPainter(picture)
    painter.setFont(font)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    if specs is None:
        return []
    ink = axis.textPen().color()
    clip = visible_part(view)
    bounds = axis.boundingRect()
    texts = []
    for box, flags, text in specs[2]:
        ink_box = text_ink(font, box, int(flags), text).intersected(bounds)  # painted clipped
        texts.append(DrawnText(text, item_in_window(view, axis, ink_box), em_px(font), ink, owner,
                               clip, ground, role))
    return texts


def axis_title(axis, view: QGraphicsView, owner: str, ground: QColor | None = None,
               role: str = "") -> list[DrawnText]:
    """An axis's title, where it is shown (its markup sets no size: the item's font is the type)."""
    label = axis.label
    text = label.toPlainText().strip()
    if not axis.isVisible() or not label.isVisible() or not text:
        return []
    margin = label.document().documentMargin()
    box = label.boundingRect().adjusted(margin, margin, -margin, -margin)
    style = getattr(axis, "labelStyle", {})  # pyqtgraph colours the title in its markup
    ink = QColor(style["color"]) if "color" in style else label.defaultTextColor()
    return [DrawnText(text, item_in_window(view, label, box), em_px(label.font()), ink, owner,
                      visible_part(view), ground, role)]


def map_shape(view: QGraphicsView, box, owner: str, name: str,
              axes: tuple[str, str] = ("", "")) -> list[DrawnShape]:
    """The map a view box shows, as the main thing of its picture; ``axes``: what its rows
    and columns hold (MapAxes's kinds), where words elsewhere name them."""
    if not box.isVisible() or box.scene() is None or not view.isVisible():
        return []
    return [DrawnShape(item_in_window(view, box, box.boundingRect()), owner, name, "map", axes=axes)]


def painted_text(widget: QWidget, text: str, box: QRectF, owner: str, *, flags: int = 0,
                 font: QFont | None = None, ink: QColor | None = None,
                 ground: QColor | None = None, role: str = "") -> DrawnText:
    """A text ``widget`` paints itself in ``box`` (its own pixels) with ``flags``."""
    font = font or widget.font()
    ink = ink or widget.palette().color(QPalette.ColorRole.WindowText)
    flags = flags or int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
    return DrawnText(text, in_window(widget, text_ink(font, box, flags, text)), em_px(font), ink,
                     owner, visible_part(widget), ground if ground is not None else ground_of(widget),
                     role)
