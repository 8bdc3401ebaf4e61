"""The application's Qt style: Fusion, which honours a palette on every platform, with a
check box's outline kept in sight on a dark window (ProjectorStyle), and the style a check box
or radio button is given so that its box grows with its text at projector type
(IndicatorStyle, through ``grows_with_text``). The colours are the theme's (theme.py); this
module only draws the parts Fusion leaves too faint or too small.
"""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette, QPen
from PySide6.QtWidgets import QAbstractButton, QApplication, QProxyStyle, QStyle, QStyleFactory


class ProjectorStyle(QProxyStyle):
    """Fusion (the style that honours a palette on every platform), with a check box's
    outline that stays in sight on a dark window. The application's style."""

    def __init__(self) -> None:
        super().__init__(QStyleFactory.create("Fusion"))

    def drawPrimitive(self, element, option, painter, widget=None) -> None:
        super().drawPrimitive(element, option, painter, widget)
        if element == QStyle.PrimitiveElement.PE_IndicatorCheckBox:
            # Fusion outlines the box in a darker window colour, which vanishes on a dark
            # window: a line in the theme's border colour keeps it 3:1 in both themes
            painter.save()
            painter.setPen(QPen(option.palette.color(QPalette.ColorRole.Mid), 1))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRect(option.rect.adjusted(0, 0, -1, -1))
            painter.restore()


class IndicatorStyle(ProjectorStyle):
    """The same, with a check box's or radio button's box growing with its text: at
    projector type a fixed 13-pixel box is lost beside a 20-point label. Given to those
    buttons alone (``grows_with_text``): as the application's style, Qt asked this Python
    override for every size of every widget, about 13,000 times before the first paint
    (some 50 ms of a start)."""

    INDICATORS = (QStyle.PixelMetric.PM_IndicatorWidth, QStyle.PixelMetric.PM_IndicatorHeight,
                  QStyle.PixelMetric.PM_ExclusiveIndicatorWidth,
                  QStyle.PixelMetric.PM_ExclusiveIndicatorHeight)

    def pixelMetric(self, metric, option=None, widget=None) -> int:
        size = super().pixelMetric(metric, option, widget)
        if metric in self.INDICATORS and widget is not None:
            size = max(size, round(widget.fontMetrics().height() * 0.8))
        return size


Button = TypeVar("Button", bound=QAbstractButton)


def grows_with_text(button: Button) -> Button:
    """``button`` (a check box or radio button) with a box as large as its text asks for."""
    app = QApplication.instance()
    style = app.findChild(IndicatorStyle, "indicator_style")  # one for every button
    if style is None:
        style = IndicatorStyle()
        style.setObjectName("indicator_style")
        style.setParent(app)
    button.setStyle(style)
    return button
