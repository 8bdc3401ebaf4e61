"""The docks of the main window, owned in one place: making them, their title bars, the names
of Qt's own buttons on them, and the room the tall docks borrow while in front.

The window, the wired docks (Weights, Layers, Generation), the Lab and the presentation
mode all go through this object instead of reaching into the window's own attributes.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton, QDockWidget, QMainWindow, QWidget


class DockShell:
    """``docks`` by key (stable names for saveState); ``add`` makes one; ``set_title_bars``
    hides or restores every title bar; ``room_before`` and ``placing`` belong to the tall
    docks' borrowing of height (qt/shell/wired_docks.py)."""

    def __init__(self, window: QMainWindow) -> None:
        self.window = window
        self.docks: dict[str, QDockWidget] = {}
        self._bare_titles: dict[str, QWidget] = {}
        self.room_before: int | None = None  # the bottom row's height before a tall dock borrowed
        self.placing = False  # a layout is being made: it chooses its own sizes

    def add(self, key: str, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self.window)
        dock.setObjectName(f"dock_{key}")  # saveState needs stable names
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        self.window.addDockWidget(area, dock)
        self.docks[key] = dock
        self.describe_buttons(dock)
        return dock

    @staticmethod
    def describe_buttons(dock: QDockWidget) -> None:
        """Qt's own float and close buttons on a dock's title bar carry no names."""
        title = dock.windowTitle().replace("&&", "&")
        direct = Qt.FindChildOption.FindDirectChildrenOnly
        for button in dock.findChildren(QAbstractButton, options=direct):
            float_button = "float" in button.objectName()
            verb = "Float" if float_button else "Close"
            button.setAccessibleName(f"{verb} the {title} panel")
            button.setToolTip(f"Detach the {title} panel into a window of its own"
                              if float_button else
                              f"Hide the {title} panel (View menu or Alt+number brings it back)")

    def set_title_bars(self, visible: bool) -> None:
        """Show the docks' title bars, or swap in empty ones (presentation mode: no
        dragging panels about in front of a class, and the room goes to the stage)."""
        for key, dock in self.docks.items():
            if visible:
                dock.setTitleBarWidget(None)
            else:
                if key not in self._bare_titles:
                    self._bare_titles[key] = QWidget(dock)
                dock.setTitleBarWidget(self._bare_titles[key])
