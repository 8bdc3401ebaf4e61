"""What the decode and tiles views share: stepping through their items by keyboard."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

FORWARD_KEYS = (Qt.Key.Key_Right, Qt.Key.Key_Down, Qt.Key.Key_Space)
BACK_KEYS = (Qt.Key.Key_Left, Qt.Key.Key_Up, Qt.Key.Key_Backspace)


class SteppedView(QWidget):
    """A painted view stepped through its items: the index stays within them, the arrow
    keys and Space move one item, and each move repaints and is announced (a signal for
    the dock, the accessible description for a screen reader)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._index = 0

    def item_count(self) -> int:
        raise NotImplementedError

    def summary(self) -> str:
        return ""

    def _announce(self, index: int) -> None:
        """Emit the subclass's own signal for a new index."""

    def go_to(self, index: int) -> None:
        if not self.item_count():
            return
        index = min(max(0, index), self.item_count() - 1)
        if index != self._index:
            self._index = index
            self._changed()

    def move(self, delta: int) -> bool:
        """One item on (or back); False at either end."""
        before = self._index
        self.go_to(self._index + delta)
        return self._index != before

    def _changed(self) -> None:
        self.setAccessibleDescription(self.summary())
        self.update()
        self._announce(self._index)

    def keyPressEvent(self, event) -> None:  # noqa: N802 - Qt's name
        if event.key() in FORWARD_KEYS:
            self.move(1)
        elif event.key() in BACK_KEYS:
            self.move(-1)
        else:
            super().keyPressEvent(event)
