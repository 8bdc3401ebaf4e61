"""The stage buttons in one row when they fit, else in two or three rows of equal
buttons: a config with more stages (positions, RoPE, latent attention, a model's
own plan) keeps every stage's name whole on a 1024-wide screen instead of
widening the window past it."""

from __future__ import annotations

import math

from PySide6.QtCore import QEvent, QSize, Qt, QTimer
from PySide6.QtWidgets import QAbstractButton, QDockWidget, QGridLayout, QMainWindow, QWidget

MAX_ROWS = 3  # more rows than this take the stage's height; twelve stages need two at 1024


class StageRows(QWidget):
    """``set_buttons(buttons)`` lays them out; ``refit()`` after their text or style changed."""

    def __init__(self, spacing: int = 3, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._grid = QGridLayout(self)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._grid.setSpacing(spacing)
        self._buttons: list[QAbstractButton] = []
        self._columns = 0

    @property
    def rows(self) -> int:
        return math.ceil(len(self._buttons) / self._columns) if self._columns else 0

    def set_buttons(self, buttons: list[QAbstractButton]) -> None:
        for button in self._buttons:
            self._grid.removeWidget(button)
        self._buttons = list(buttons)
        self._columns = 0
        self.refit()

    def refit(self) -> None:
        """As many buttons to a row as the width takes, the rows as even as they go."""
        columns = self._columns_for(self.width())
        if columns != self._columns:
            self._place(columns)
        else:
            # a button polished by a style sheet already in place grows without telling its
            # layout, which kept the size it measured before (a name cut): have it measure again
            for button in self._buttons:
                if button.isVisible() and button.width() < button.minimumSizeHint().width():
                    button.updateGeometry()

    def _width_of(self, columns: int) -> int:
        """The row's least width with ``columns`` buttons to a row: each column as wide
        as its widest button (one row: every button's own width, as a plain row)."""
        widths = [b.minimumSizeHint().width() for b in self._buttons]
        return (sum(max(widths[c::columns]) for c in range(min(columns, len(widths))))
                + max(columns - 1, 0) * self._grid.spacing())

    def _columns_for(self, width: int) -> int:
        count = len(self._buttons)
        for rows in range(1, MAX_ROWS + 1):
            columns = math.ceil(count / rows)
            if self._width_of(columns) <= width:
                return columns
        return math.ceil(count / MAX_ROWS)

    def _place(self, columns: int) -> None:
        for button in self._buttons:
            self._grid.removeWidget(button)
        for column in range(self._grid.columnCount()):
            self._grid.setColumnStretch(column, 0)
        columns = max(columns, 1)
        rows = math.ceil(len(self._buttons) / columns)
        columns = math.ceil(len(self._buttons) / rows) if rows else columns  # even rows
        for i, button in enumerate(self._buttons):
            self._grid.addWidget(button, i // columns, i % columns)
        for column in range(columns):
            self._grid.setColumnStretch(column, 1)
        rows_before, self._columns = self.rows, columns
        self.updateGeometry()
        if self.rows != rows_before:
            QTimer.singleShot(0, self._fit_dock)

    def _fit_dock(self) -> None:
        """A window keeps a dock's height when its content needs fewer rows: give the
        dock back its rows' height (three rows at a narrow start stayed as a tall bar)."""
        dock = self.parentWidget()
        while dock is not None and not isinstance(dock, QDockWidget):
            dock = dock.parentWidget()
        window = dock.parentWidget() if dock is not None else None
        if isinstance(window, QMainWindow) and not dock.isFloating() and dock.isVisible():
            window.resizeDocks([dock], [dock.minimumSizeHint().height()], Qt.Orientation.Vertical)

    def minimumSizeHint(self) -> QSize:
        """As narrow as MAX_ROWS rows allow, as tall as the rows now shown."""
        width = self._width_of(math.ceil(len(self._buttons) / MAX_ROWS))
        return QSize(width, super().minimumSizeHint().height())

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.LayoutRequest:  # a button's type or padding changed
            self.refit()
        return super().event(event)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.refit()
