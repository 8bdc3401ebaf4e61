"""Three plots and a larger view arranged by the room there is: wide, the plots in a
row over the view, which gets the whole width; narrow, two by two."""

from __future__ import annotations

from PySide6.QtWidgets import QGridLayout, QWidget

WIDE_PX = 1100  # three plots in a row are each at least a third of this


class Reflow(QWidget):
    def __init__(self, plots: tuple[QWidget, QWidget, QWidget], view: QWidget, parent: QWidget | None = None):
        super().__init__(parent)
        self._plots, self._view = plots, view
        self._grid = QGridLayout(self)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._wide: bool | None = None
        self._place(wide=False)

    @property
    def wide(self) -> bool:
        return bool(self._wide)

    def _place(self, wide: bool) -> None:
        if wide == self._wide:
            return
        self._wide = wide
        for widget in (*self._plots, self._view):
            self._grid.removeWidget(widget)
        if wide:
            for column, plot in enumerate(self._plots):
                self._grid.addWidget(plot, 0, column)
            self._grid.addWidget(self._view, 1, 0, 1, 3)
            stretches = ((0, 2), (1, 3))  # the view (a sweep's 16 maps) gets more height
        else:
            for i, widget in enumerate((*self._plots, self._view)):
                self._grid.addWidget(widget, i // 2, i % 2)
            stretches = ((0, 1), (1, 1))
        for row, stretch in stretches:
            self._grid.setRowStretch(row, stretch)
        for column in range(3):
            self._grid.setColumnStretch(column, 1 if wide or column < 2 else 0)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        self._place(wide=event.size().width() >= WIDE_PX)
        super().resizeEvent(event)
