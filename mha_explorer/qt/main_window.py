"""The main window: composes the panels as docks, the menus and the shortcuts.

It owns no state of its own beyond layout: the controller holds the config,
trace and stage, and every panel subscribes to it.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMainWindow, QWidget

from .controller import Controller
from .controls import ControlsPanel
from .heatmaps import HeatmapPanel
from .params_panel import ParamsPanel
from .settings import Preferences
from .shapes_table import ShapesTable
from .stage_view import StageView
from .status_bar import StatusBarView
from .stepper import StageStepper

WINDOW_TITLE = "MHA Explorer"


class MainWindow(QMainWindow):
    def __init__(self, controller: Controller, prefs: Preferences | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.prefs = prefs
        self.setWindowTitle(f"{WINDOW_TITLE} — multi-head attention, stage by stage")
        self.setObjectName("MainWindow")
        self.setDockOptions(QMainWindow.DockOption.AnimatedDocks
                            | QMainWindow.DockOption.AllowTabbedDocks
                            | QMainWindow.DockOption.AllowNestedDocks)

        self.stage_view = StageView(controller)
        self.setCentralWidget(self.stage_view)
        self.controls = ControlsPanel(controller)
        self.stepper = StageStepper(controller)
        self.shapes = ShapesTable(controller)
        self.params = ParamsPanel(controller)
        self.heatmaps = HeatmapPanel(controller)
        self.status_view = StatusBarView(controller, self.statusBar())

        self.docks: dict[str, QDockWidget] = {}
        self._dock("stages", "Stages", self.stepper, Qt.DockWidgetArea.TopDockWidgetArea)
        self._dock("controls", "Configuration", self.controls, Qt.DockWidgetArea.LeftDockWidgetArea)
        self._dock("heatmaps", "Heads", self.heatmaps, Qt.DockWidgetArea.RightDockWidgetArea)
        self._dock("shapes", "Shapes", self.shapes, Qt.DockWidgetArea.BottomDockWidgetArea)
        self._dock("params", "Parameters && memory", self.params, Qt.DockWidgetArea.BottomDockWidgetArea)

        self.actions: dict[str, QAction] = {}
        self._build_menus()
        controller.config_changed.connect(self._remember_config)
        if prefs is not None:
            for warning in prefs.warnings:
                self.statusBar().showMessage(warning, 10_000)

    # layout --------------------------------------------------------------------
    def _dock(self, key: str, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock_{key}")  # saveState needs stable names
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        self.addDockWidget(area, dock)
        self.docks[key] = dock
        return dock

    def apply_default_layout(self) -> None:
        """Sizes that work at 1280×720 and scale up to 1920×1080."""
        w, h = max(self.width(), 1280), max(self.height(), 720)
        for dock in self.docks.values():
            dock.setFloating(False)
            dock.show()
        shapes, params = self.docks["shapes"], self.docks["params"]
        if w < 1600:
            # a small screen: shapes and parameters share the bottom as tabs
            self.tabifyDockWidget(shapes, params)
            shapes.raise_()
        else:
            self.splitDockWidget(shapes, params, Qt.Orientation.Horizontal)
            self.resizeDocks([shapes, params], [int(w * 0.55), int(w * 0.25)], Qt.Orientation.Horizontal)
        self.resizeDocks([self.docks["controls"]], [max(300, w // 5)], Qt.Orientation.Horizontal)
        self.resizeDocks([self.docks["heatmaps"]], [int(w * 0.30)], Qt.Orientation.Horizontal)
        self.resizeDocks([shapes], [int(h * 0.28)], Qt.Orientation.Vertical)

    def sizeHint(self) -> QSize:
        return QSize(1280, 720)

    def restore_layout(self) -> None:
        if self.prefs is None:
            self.apply_default_layout()
            return
        geometry, state = self.prefs.load_layout()
        if geometry is not None:
            self.restoreGeometry(geometry)
        if state is None or not self.restoreState(state):
            self.apply_default_layout()

    # menus and shortcuts ---------------------------------------------------------
    def _action(self, key: str, text: str, shortcut, slot, menu, tip: str) -> QAction:
        action = QAction(text, self)
        action.setShortcuts([QKeySequence(s) for s in (shortcut if isinstance(shortcut, (list, tuple)) else [shortcut])])
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        action.setToolTip(tip)
        action.setStatusTip(tip)
        action.triggered.connect(slot)
        menu.addAction(action)
        self.addAction(action)  # shortcuts work while menus are hidden (presentation mode)
        self.actions[key] = action
        return action

    def _build_menus(self) -> None:
        c = self.controller
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self._action("quit", "&Quit", "Ctrl+Q",
                     self.close, file_menu, "Close MHA Explorer")

        stage = bar.addMenu("&Stage")
        self._action("previous", "&Previous stage", [Qt.Key.Key_Left, Qt.Key.Key_PageUp],
                     c.previous_stage, stage, "Step back one stage (Left)")
        self._action("next", "&Next stage", [Qt.Key.Key_Right, Qt.Key.Key_PageDown],
                     c.next_stage, stage, "Step forward one stage (Right)")
        self._action("first", "&First stage", Qt.Key.Key_Home, c.first_stage, stage,
                     "Go to the input stage (Home)")
        self._action("last", "&Last stage", Qt.Key.Key_End, c.last_stage, stage,
                     "Go to the output stage (End)")
        self._action("play", "Play / &pause", Qt.Key.Key_Space, c.toggle_play, stage,
                     "Play the stages one after another, or pause (Space)")

        view = bar.addMenu("&View")
        for i, (key, dock) in enumerate(self.docks.items(), start=1):
            toggle = dock.toggleViewAction()
            toggle.setShortcut(QKeySequence(f"Alt+{i}"))
            toggle.setToolTip(f"Show or hide the {dock.windowTitle()} panel (Alt+{i})")
            view.addAction(toggle)
            self.actions[f"toggle_{key}"] = toggle
        view.addSeparator()
        self._action("reset_layout", "&Reset layout", "Ctrl+Shift+R", self.apply_default_layout,
                     view, "Put every panel back where it started")

    # persistence ---------------------------------------------------------------
    def _remember_config(self, cfg) -> None:
        if self.prefs is not None:
            self.prefs.save_config(cfg)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.controller.shutdown()
        if self.prefs is not None:
            self.prefs.save_layout(self.saveGeometry(), self.saveState())
            self.prefs.save_config(self.controller.config)
            self.prefs.sync()
        super().closeEvent(event)
