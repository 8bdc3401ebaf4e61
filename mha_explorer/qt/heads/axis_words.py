"""The line over a set of maps that says what their rows and columns are ("rows: queries ↓",
"columns: features (D = 512) →"), read from the maps' own axes (core.display.head_maps.MapAxes):
keys only where the columns are keys. On one line when both fit, else one under the other,
each wrapped at a word and never cut."""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QFontMetricsF, QPainter, QPalette
from PySide6.QtWidgets import QSizePolicy, QWidget

from mha_explorer.core.display.head_maps import MapAxes
from mha_explorer.qt.drawn import painted_text
from mha_explorer.qt.picture import DrawnShape, DrawnText

GAP = "    "  # between the rows' words and the columns' on one line
ROLES = ("rows", "columns")
WRAP = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextWordWrap)


class AxisWords(QWidget):
    """``set_axes(MapAxes | None)``; ``text()`` both lines as one; ``axes`` the MapAxes
    shown, so a check can hold the words to the maps."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("map_axes_words")
        self.axes: MapAxes | None = None
        self._lines: tuple[str, ...] = ()
        policy = QSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)

    def set_axes(self, axes: MapAxes | None) -> None:
        self.axes = axes
        self._lines = axes.lines() if axes is not None else ()
        self.setAccessibleName(self.text())
        self.updateGeometry()
        self.update()

    def text(self) -> str:
        return GAP.join(self._lines)

    # layout ------------------------------------------------------------------------------
    def _boxes(self, width: float) -> list[QRectF]:
        """Where each line's words go in ``width``: side by side when both fit, else one
        under the other, each wrapped at a word."""
        metrics = QFontMetricsF(self.font())
        if not self._lines:
            return []
        if metrics.horizontalAdvance(self.text()) <= width:
            x = metrics.horizontalAdvance(self._lines[0] + GAP)
            return [QRectF(0, 0, x, metrics.height()),
                    QRectF(x, 0, max(width - x, 1.0), metrics.height())]
        boxes, y = [], 0.0
        for line in self._lines:
            height = metrics.boundingRect(QRectF(0, 0, width, 1e6), WRAP, line).height()
            boxes.append(QRectF(0, y, width, height))
            y += height
        return boxes

    def hasHeightForWidth(self) -> bool:  # Qt's API
        return True

    def heightForWidth(self, width: int) -> int:  # Qt's API
        boxes = self._boxes(max(width, 1))
        return int(max((b.bottom() for b in boxes), default=0.0)) + 2

    def sizeHint(self) -> QSize:  # Qt's API
        width = int(QFontMetricsF(self.font()).horizontalAdvance(self.text())) + 2
        return QSize(width, self.heightForWidth(width))

    def minimumSizeHint(self) -> QSize:  # Qt's API
        return QSize(0, int(QFontMetricsF(self.font()).height()) + 2 if self._lines else 0)

    def paintEvent(self, _event) -> None:  # Qt's API
        p = QPainter(self)
        p.setPen(self.palette().color(QPalette.ColorRole.WindowText))
        for line, box in zip(self._lines, self._boxes(self.width()), strict=True):
            p.drawText(box, WRAP, line)
        p.end()

    # what a picture check reads ----------------------------------------------------------
    def drawn_texts(self) -> list[DrawnText]:
        if not self.isVisible():
            return []
        return [painted_text(self, line, box, "heads: axes", flags=WRAP, role=role)
                for line, box, role in zip(self._lines, self._boxes(self.width()), ROLES, strict=True)]

    def drawn_shapes(self) -> list[DrawnShape]:
        return []
