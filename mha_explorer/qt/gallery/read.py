"""Reading a window as a picture: every text and every tensor a person sees in it.

Views that draw their own words (the stage diagram, a plot, a heatmap) list them through
``Pictured`` (qt/picture.py); plain widgets (labels, buttons, tab bars, table headers) are read
from Qt: their text, the box their style puts it in and the part of them in sight. A grab of
the window gives what lies behind each text where its view does not say.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from PySide6 import QtGui
from PySide6.QtCore import QPoint, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QImage, QTextDocument
from PySide6.QtWidgets import (
    QAbstractButton,
    QCheckBox,
    QDockWidget,
    QHeaderView,
    QLabel,
    QPushButton,
    QRadioButton,
    QStatusBar,
    QStyle,
    QStyleOptionButton,
    QStyleOptionTab,
    QTabBar,
    QToolButton,
    QWidget,
)

from mha_explorer.qt.picture import DrawnShape, DrawnText, Pictured, seen_rect
from mha_explorer.qt.picture_items import font_points

NO_INK = QColor()  # not said: read from the grab, the pixel that stands out most from the ground


@dataclass
class Picture:
    """One window as seen: its texts and shapes in window coordinates, and its grab."""

    name: str
    texts: list[DrawnText]
    shapes: list[DrawnShape]
    image: QImage  # the window, at its device pixel ratio
    screen_height: float  # of the screen it is on, in device-independent pixels
    presenting: bool


def _in_window(widget: QWidget, rect: QRectF | QRect) -> QRectF:
    return QRectF(rect).translated(widget.mapTo(widget.window(), QPoint(0, 0)))


def _seen(widget: QWidget) -> QRectF:
    return seen_rect(widget)


def _px(widget: QWidget, font: QFont) -> float:
    return font_points(font, widget.logicalDpiY()) * widget.logicalDpiY() / 72


def _mnemonic_free(text: str) -> str:
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&")


def _shown(widget: QWidget) -> bool:
    return widget.isVisible() and not seen_rect(widget).isEmpty()


def _label(label: QLabel) -> list[DrawnText]:
    shown = getattr(label, "shown_text", None)  # a label that draws its text cut says what it draws
    text = shown() if callable(shown) else label.text()
    if not text.strip():
        return []
    box = QRectF(label.contentsRect()).adjusted(label.margin(), label.margin(), -label.margin(),
                                                 -label.margin())
    rich = label.textFormat() == Qt.TextFormat.RichText or (
        label.textFormat() == Qt.TextFormat.AutoText and QtGui.Qt.mightBeRichText(text))
    if rich:
        doc = QTextDocument()
        doc.setDefaultFont(label.font())
        doc.setDocumentMargin(0)
        doc.setHtml(text)
        doc.setTextWidth(box.width() if label.wordWrap() else -1)
        size = doc.size()
        align = label.alignment()
        x = box.left() if align & Qt.AlignmentFlag.AlignLeft or not align & (
            Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignRight) else (
            box.right() - size.width() if align & Qt.AlignmentFlag.AlignRight
            else box.center().x() - size.width() / 2)
        y = box.top() if align & Qt.AlignmentFlag.AlignTop else (
            box.bottom() - size.height() if align & Qt.AlignmentFlag.AlignBottom
            else box.center().y() - size.height() / 2)
        ink_box = QRectF(x, y, size.width(), size.height())
        text = doc.toPlainText()
    else:
        if label.buddy() is not None:
            text = _mnemonic_free(text)
        flags = int(label.alignment())
        if label.wordWrap():
            flags |= int(Qt.TextFlag.TextWordWrap)
        ink_box = QFontMetricsF(label.font()).boundingRect(box, flags, text)
    return [DrawnText(text, _in_window(label, ink_box), _px(label, label.font()), NO_INK,
                      f"label {label.objectName() or text[:20]!r}",
                      _in_window(label, box).intersected(_seen(label)))]


def _button(button: QAbstractButton) -> list[DrawnText]:
    text = _mnemonic_free(button.text())
    if not text.strip():
        return []
    if isinstance(button, QToolButton) and \
            button.toolButtonStyle() == Qt.ToolButtonStyle.ToolButtonIconOnly and not button.icon().isNull():
        return []  # its text is its accessible name, not drawn
    metrics = QFontMetricsF(button.font())
    option = QStyleOptionButton()
    option.initFrom(button)
    style = button.style()
    flags = int(Qt.AlignmentFlag.AlignCenter)
    if isinstance(button, QCheckBox | QRadioButton):
        element = (QStyle.SubElement.SE_CheckBoxContents if isinstance(button, QCheckBox)
                   else QStyle.SubElement.SE_RadioButtonContents)
        box = QRectF(style.subElementRect(element, option, button))
        flags = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
    elif isinstance(button, QPushButton):
        box = QRectF(style.subElementRect(QStyle.SubElement.SE_PushButtonContents, option, button))
    else:  # a tool button: its frame's margin all round
        margin = style.pixelMetric(QStyle.PixelMetric.PM_ButtonMargin, None, button) / 2
        box = QRectF(button.rect()).adjusted(margin, 0, -margin, 0)
    if not button.icon().isNull() and not isinstance(button, QCheckBox | QRadioButton):
        room = button.iconSize().width() + 4
        box.adjust(room, 0, 0, 0)
    ink_box = metrics.boundingRect(box, flags, text)
    return [DrawnText(text, _in_window(button, ink_box), _px(button, button.font()), NO_INK,
                      f"button {button.objectName() or text[:20]!r}",
                      _in_window(button, button.rect()).intersected(_seen(button)))]


def _header(header: QHeaderView) -> list[DrawnText]:
    model = header.model()
    if model is None:
        return []
    margin = header.style().pixelMetric(QStyle.PixelMetric.PM_HeaderMargin, None, header)
    metrics = QFontMetricsF(header.font())
    port = header.viewport()
    texts = []
    for visual in range(header.count()):
        logical = header.logicalIndex(visual)
        if header.isSectionHidden(logical):
            continue
        text = model.headerData(logical, header.orientation(), Qt.ItemDataRole.DisplayRole)
        if text is None or not str(text).strip():
            continue
        at, size = header.sectionViewportPosition(logical), header.sectionSize(logical)
        if header.orientation() == Qt.Orientation.Horizontal:
            section = QRectF(at, 0, size, port.height())
        else:
            section = QRectF(0, at, port.width(), size)
        box = section.adjusted(margin, 0, -margin, 0)
        ink_box = metrics.boundingRect(box, int(header.defaultAlignment()), str(text))
        texts.append(DrawnText(str(text), _in_window(port, ink_box), _px(header, header.font()), NO_INK,
                               f"header {header.objectName() or 'of a table'}",
                               _in_window(port, section).intersected(_seen(port))))
    return texts


def _tab_words(bar: QTabBar, i: int, text: str) -> tuple[str, QRectF]:
    """A tab's words as drawn, and the box they are centred in: shortened with an ellipsis
    to the tab's room where the bar elides (as QTabBar does it)."""
    tab = QRectF(bar.tabRect(i))
    if bar.elideMode() == Qt.TextElideMode.ElideNone:
        return text, tab
    option = QStyleOptionTab()
    option.initFrom(bar)
    option.rect, option.text, option.shape = bar.tabRect(i), text, bar.shape()
    room = QRectF(bar.style().subElementRect(QStyle.SubElement.SE_TabBarTabText, option, bar))
    shown = QFontMetricsF(bar.font()).elidedText(text, bar.elideMode(), room.width())
    return shown, room


def _tabs(bar: QTabBar) -> list[DrawnText]:
    metrics = QFontMetricsF(bar.font())
    texts = []
    for i in range(bar.count()):
        tab = QRectF(bar.tabRect(i))
        if not bar.tabText(i).strip() or tab.isEmpty():
            continue
        text, room = _tab_words(bar, i, _mnemonic_free(bar.tabText(i)))
        ink_box = metrics.boundingRect(room, int(Qt.AlignmentFlag.AlignCenter), text)
        texts.append(DrawnText(text, _in_window(bar, ink_box), _px(bar, bar.font()), NO_INK,
                               f"tab {text[:20]!r}", _in_window(bar, tab).intersected(_seen(bar))))
    return texts


def plain_texts(widget: QWidget) -> list[DrawnText]:
    """The texts Qt draws for a plain widget (none for anything else)."""
    if isinstance(widget, QLabel):
        return _label(widget)
    if isinstance(widget, QAbstractButton):
        return _button(widget)
    if isinstance(widget, QHeaderView):
        return _header(widget)
    if isinstance(widget, QTabBar):
        return _tabs(widget)
    return []


def area_of(widget: QWidget) -> str:
    """The part of the window a widget is in: its dock's title, "stage view" (the centre) or
    "status bar"; faults are told apart by it."""
    window = widget.window()
    while widget is not None and widget is not window:
        if isinstance(widget, QDockWidget):
            return widget.windowTitle().replace("&", "")
        if isinstance(widget, QStatusBar):
            return "status bar"
        if window is not None and widget is getattr(window, "centralWidget", lambda: None)():
            return "stage view"
        widget = widget.parentWidget()
    return "window"


def read_window(window: QWidget, name: str, screen_height: float, presenting: bool) -> Picture:
    """Every visible text and shape of ``window``, each owner named with its area, and its grab."""
    texts: list[DrawnText] = []
    shapes: list[DrawnShape] = []
    for widget in [window, *window.findChildren(QWidget)]:
        if not _shown(widget) or widget.window() is not window:
            continue
        area = area_of(widget)
        if isinstance(widget, Pictured):
            texts += [replace(t, owner=f"{area}: {t.owner}") for t in widget.drawn_texts()]
            shapes += [replace(s, owner=f"{area}: {s.owner}") for s in widget.drawn_shapes()]
        # a plain widget's text scrolled wholly out of sight is not in the picture (a view's
        # own text outside it is: it should have been drawn in sight)
        texts += [replace(t, owner=f"{area}: {t.owner}") for t in plain_texts(widget)
                  if not t.clip.isEmpty()]
    image = window.grab().toImage()
    return Picture(name, texts, shapes, image, screen_height, presenting)

