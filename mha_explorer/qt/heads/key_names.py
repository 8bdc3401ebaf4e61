"""The key names under a large map, turned upright so that every column keeps its whole
word (the axis under a map has room for one word in a few when they lie flat); columns
narrower than a line of type name every k-th key, as the axes do (core.display.token_ticks)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, QPointF, QRectF
from PySide6.QtGui import QFontMetrics, QPainter
from PySide6.QtWidgets import QSizePolicy, QWidget

from mha_explorer.core.display.token_ticks import label_step, spaced_positions
from mha_explorer.qt.drawn import em_px, ground_of, in_window, visible_part
from mha_explorer.qt.picture import DrawnShape, DrawnText

MAX_NAME_CHARS = 12  # a longer word is cut, so the names never take the map's height


class KeyNames(QWidget):
    """Paints ``names`` turned 90°, one under each column of ``cell``'s map."""

    def __init__(self, cell, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("focused_head_keys")
        self.cell = cell
        self.names: tuple[str, ...] = ()
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

    def set_names(self, names) -> None:
        self.names = tuple(n if len(n) <= MAX_NAME_CHARS else n[:MAX_NAME_CHARS - 1] + "…"
                           for n in names)
        metrics = QFontMetrics(self.font())
        self.setFixedHeight(max((metrics.horizontalAdvance(n) for n in self.names), default=0) + 8)
        self.setVisible(bool(self.names))
        self.update()

    def changeEvent(self, event) -> None:  # Qt's API
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # presentation's type: measure again
            self.set_names(self.names)

    def column_centres(self) -> list[float]:
        """x of each column's centre in this widget, from where the map is drawn."""
        vb, view = self.cell.vb, self.cell.view
        centres = []
        for j in range(len(self.names)):
            device = vb.mapViewToDevice(QPointF(j, 0))  # in the map view's pixels
            if device is None:
                return []
            spot = view.mapTo(self.window(), QPoint(round(device.x()), 0))
            centres.append(float(self.mapFrom(self.window(), spot).x()))
        return centres

    def shown(self) -> list[tuple[str, float]]:
        """The names drawn and their columns' centres: every k-th where the columns are
        narrower than a line of type and a space (turned names side by side)."""
        centres = self.column_centres()
        metrics = QFontMetrics(self.font())
        if len(centres) < 2:
            return list(zip(self.names, centres, strict=False))
        need = metrics.height() + metrics.horizontalAdvance(" ")
        step = label_step(len(centres), need, abs(centres[-1] - centres[0]) + need)
        half = metrics.height() / 2  # a name at the map's edge stays whole, beside its column
        return [(self.names[j], min(max(centres[j], half), self.width() - half))
                for j in spaced_positions(len(centres), step)]

    def name_rects(self) -> list[QRectF]:
        """Where each name is drawn (turned), in this widget's pixels."""
        metrics = QFontMetrics(self.font())
        h = metrics.height()
        return [QRectF(x - h / 2, 4, h, metrics.horizontalAdvance(n)) for n, x in self.shown()]

    def paintEvent(self, _event) -> None:  # Qt's API
        if not self.names:
            return
        p = QPainter(self)
        p.setPen(self.palette().windowText().color())
        metrics = QFontMetrics(self.font())
        for name, x in self.shown():
            p.save()
            p.translate(x + metrics.ascent() / 2 - metrics.descent() / 2, 4)
            p.rotate(90)  # reads top to bottom, its first letter next to the map
            p.drawText(QPointF(0, 0), name)
            p.restore()
        p.end()

    # what a picture check reads --------------------------------------------------------
    def drawn_texts(self) -> list[DrawnText]:
        if not self.isVisible():
            return []
        ink, ground, clip = self.palette().windowText().color(), ground_of(self), visible_part(self)
        return [DrawnText(name, in_window(self, rect), em_px(self.font()), ink, "heads: key names",
                          clip, ground, turned=True)
                for (name, _x), rect in zip(self.shown(), self.name_rects(), strict=False)]

    def drawn_shapes(self) -> list[DrawnShape]:
        return []
