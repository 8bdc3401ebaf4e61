"""Whether a panel is where a person can see it, and a call each time it comes into sight.

A dock tabbed behind another keeps ``isVisible()`` True (Qt covers it rather than hiding it):
only its visible region is empty, and only its dock's ``visibilityChanged`` says when its tab
comes to the front. A panel that computes for what is on screen asks ``in_sight`` before it
sends work, and ``SightWatch`` tells it when to send what it held back.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QDockWidget, QWidget


def in_sight(widget: QWidget) -> bool:
    """Shown, and not covered by another dock's tab."""
    return widget.isVisible() and not widget.visibleRegion().isEmpty()


class SightWatch(QObject):
    """Calls ``came_into_sight()`` when ``widget`` is shown or its dock's tab comes to the front
    (a turn later, once laid out, and only if it is then in sight)."""

    def __init__(self, widget: QWidget, came_into_sight: Callable[[], None]) -> None:
        super().__init__(widget)
        self._widget, self._call = widget, came_into_sight
        self._dock: QDockWidget | None = None
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if watched is self._widget and event.type() == QEvent.Type.Show:
            self._follow_dock()
            self._soon()
        return False

    def _follow_dock(self) -> None:
        parent = self._widget.parentWidget()
        while parent is not None and not isinstance(parent, QDockWidget):
            parent = parent.parentWidget()
        if parent is not None and parent is not self._dock:
            self._dock = parent
            parent.visibilityChanged.connect(lambda shown: shown and self._soon())

    def _soon(self) -> None:
        QTimer.singleShot(0, self, lambda: in_sight(self._widget) and self._call())
