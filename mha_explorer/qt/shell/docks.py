"""The docks of the main window, owned in one place: making them, their title bars, the names
of Qt's own buttons on them, the room the tall docks borrow while in front, and the docks
whose panels are built only when first needed.

The window, the wired docks (Weights, Layers, Generation), the Lab and the presentation
mode all go through this object instead of reaching into the window's own attributes.
"""

from __future__ import annotations

from collections.abc import Callable

import shiboken6
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QAbstractButton, QDockWidget, QLabel, QMainWindow, QWidget

# docks without a title bar in every mode: the stage timeline runs across the window's top like a
# tool bar; its "Stages" bar took 22 of the rows a 720-row screen has for the diagram
BARE = ("stages",)
QT_PARTS = {  # object name: (accessible name, tool tip)
    "qt_menubar_ext_button": ("More menus", "Menus that do not fit the window"),
    "ScrollLeftButton": ("Earlier tabs", "Show the tabs to the left"),
    "ScrollRightButton": ("Later tabs", "Show the tabs to the right"),
    "qt_tableview_cornerbutton": ("Select all", "Select the whole table"),
}


def name_qt_parts(root: QWidget) -> None:
    """Name the buttons Qt makes on its own under ``root`` (the menu bar's overflow arrow,
    the scroll arrows of tab bars, a table's corner), which carry no names or tips."""
    for button in root.findChildren(QAbstractButton):
        name, tip = QT_PARTS.get(button.objectName(), ("", ""))
        if name and not button.accessibleName():
            button.setAccessibleName(name)
        if tip and not button.toolTip():
            button.setToolTip(tip)


class DockShell:
    """``docks`` by key (stable names for saveState); ``add`` makes one; ``add_later`` makes one
    whose panel is built on first need (``built``); ``set_title_bars`` hides or restores every
    title bar; ``room_before`` and ``placing`` belong to the tall docks' borrowing of height
    (qt/shell/wired_docks.py)."""

    def __init__(self, window: QMainWindow) -> None:
        self.window = window
        self.docks: dict[str, QDockWidget] = {}
        self._bare_titles: dict[str, QWidget] = {}
        self.room_before: int | None = None  # the bottom row's height before a tall dock borrowed
        self.placing = False  # a layout is being made: it chooses its own sizes
        self._builders: dict[str, Callable[[], QWidget]] = {}  # docks still showing a placeholder

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
        if key in BARE:
            dock.setTitleBarWidget(self._bare(key))
        return dock

    def add_later(self, key: str, title: str, build: Callable[[], QWidget], area: Qt.DockWidgetArea,
                  *, waiting: str = "", when_shown: bool = True) -> QDockWidget:
        """A dock that shows ``waiting`` until its panel is needed: ``built(key)`` makes it
        (``build()``, once), and so does the dock coming into sight when ``when_shown``. Every
        panel built with the window is more of the start-up before its first paint; one that
        starts hidden behind a tab can wait."""
        placeholder = QLabel(waiting, wordWrap=True, alignment=Qt.AlignmentFlag.AlignCenter)
        dock = self.add(key, title, placeholder, area)
        self._builders[key] = build
        if when_shown:
            # a tab is shown for a moment while the window arranges its docks: build only when
            # the dock is still in sight once the event loop comes back
            dock.visibilityChanged.connect(
                lambda visible: visible and QTimer.singleShot(0, lambda: self._build_if_shown(key)))
        return dock

    def built(self, key: str) -> QWidget:
        """The dock's panel, built now if it was waiting."""
        build = self._builders.pop(key, None)
        dock = self.docks[key]
        if build is not None:
            placeholder = dock.widget()
            dock.setWidget(build())
            placeholder.hide()  # setWidget leaves it a child, drawn where it was until deleted
            placeholder.deleteLater()
            name_qt_parts(dock.widget())
        return dock.widget()

    def waiting(self) -> list[str]:
        """The docks whose panels are not built yet."""
        return list(self._builders)

    def _build_if_shown(self, key: str) -> None:
        dock = self.docks[key]
        if (key in self._builders and shiboken6.isValid(dock) and dock.isVisible()
                and not dock.visibleRegion().isEmpty()):
            self.built(key)

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
            dock.setTitleBarWidget(None if visible and key not in BARE else self._bare(key))

    def _bare(self, key: str) -> QWidget:
        """The empty title bar that stands in for ``key``'s."""
        if key not in self._bare_titles:
            self._bare_titles[key] = QWidget(self.docks[key])
        return self._bare_titles[key]
