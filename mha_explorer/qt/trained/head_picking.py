"""Picking a head in a grid of layers × heads by mouse or keys, shared by the Layers grid and
the What-if grids: a click or Enter chooses the cell; the arrows move the current one."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeyEvent, QMouseEvent

MOVES = {Qt.Key.Key_Left: (0, -1), Qt.Key.Key_Right: (0, 1), Qt.Key.Key_Up: (-1, 0), Qt.Key.Key_Down: (1, 0)}
CHOOSE = (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space)


class PicksAHead:
    """Mixed into a QWidget (before it) that has ``shape`` (layers, heads), ``_current``
    ((layer 1-based, head 0-based) or None), ``set_current(layer, head)``, ``cell_at(point)``
    and a ``head_chosen(layer, head)`` signal."""

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt's name
        cell = self.cell_at(event.position().toPoint())
        if cell is None:
            super().mousePressEvent(event)
            return
        self.set_current(*cell)
        self.head_chosen.emit(*cell)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt's name
        layers, heads = self.shape
        if not layers or event.key() not in (*MOVES, *CHOOSE):
            super().keyPressEvent(event)
            return
        layer, head = self._current or (1, 0)
        if event.key() in MOVES:
            dl, dh = MOVES[event.key()]
            self.set_current(min(max(layer + dl, 1), layers), min(max(head + dh, 0), heads - 1))
        else:
            self.set_current(layer, head)
            self.head_chosen.emit(layer, head)
