"""The main window: composes the panels as docks, the menus and the shortcuts.

It owns no state of its own beyond layout and look: the controller holds the
config, trace and stage, and every panel subscribes to it. Every action has a
shortcut and lives on the window itself (not only in its menu), so the keys
work while presentation mode hides the menus; the key help overlay reads them
back from the actions.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import threading
from typing import TYPE_CHECKING

from PySide6.QtCore import QRect, QSize, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent
from PySide6.QtWidgets import QApplication, QDockWidget, QMainWindow, QWidget

from mha_explorer.core.engine.libraries import map_torch_libraries  # finds dlopen on this thread
from mha_explorer.qt.controller import Controller
from mha_explorer.qt.panels.configuration import ControlsPanel
from mha_explorer.qt.panels.shapes import ShapesTable
from mha_explorer.qt.panels.stages import StageStepper
from mha_explorer.qt.shell import layouts
from mha_explorer.qt.shell.compute_gate import ComputeGate
from mha_explorer.qt.shell.docks import DockShell, name_qt_parts
from mha_explorer.qt.shell.first_paint import FirstPaint
from mha_explorer.qt.shell.long_lived import LongLivedFreezer
from mha_explorer.qt.shell.menus import build_menus
from mha_explorer.qt.shell.presentation import HIDDEN_DOCKS, Presenter, fit_on_screen
from mha_explorer.qt.shell.settings import Preferences
from mha_explorer.qt.shell.status_bar import StatusBarView
from mha_explorer.qt.shell.theme import DEFAULT_THEME, Theme, apply_theme, other_theme, theme_named
from mha_explorer.qt.shell.variant_docks import LabDock, config_page, parameters_page
from mha_explorer.qt.shell.window_export import WindowExport
from mha_explorer.qt.shell.wired_docks import add_wired_docks
from mha_explorer.qt.stage.stage_view import StageView

if TYPE_CHECKING:
    from mha_explorer.core.stages.trace import Trace
    from mha_explorer.qt.shell.about_dialog import AboutDialog
    from mha_explorer.qt.shell.help_dialog import HelpDialog
    from mha_explorer.qt.shell.key_help import KeyHelpOverlay
    from mha_explorer.qt.trained.compare_window import CompareWindow

WINDOW_TITLE = "MHA Explorer"
# the docks that start behind another tab: their panels are built after the first paint
BEHIND_TABS = ("params", "layers", "generation")
HEADS_MODULE = "mha_explorer.qt.heads.heads_panel"  # with pyqtgraph and numpy under it
# a window that is never painted (started minimised) still computes, this long after it asked
FIRST_FRAME_WAIT_MS = 5000


class MainWindow(FirstPaint, WindowExport, QMainWindow):
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
        self.status_view = StatusBarView(controller, self.statusBar())

        self.shell = DockShell(self)  # every dock is made and held there
        self.docks = self.shell.docks
        self._dock("stages", "Stages", self.stepper, Qt.DockWidgetArea.TopDockWidgetArea)
        self._dock("controls", "Configuration", config_page(self), Qt.DockWidgetArea.LeftDockWidgetArea)
        # pyqtgraph takes a good part of a second to import: the heads panel is built
        # when the first trace arrives (or when asked for), after the window is up
        self.shell.add_later("heatmaps", "Heads", self._make_heatmaps, Qt.DockWidgetArea.RightDockWidgetArea,
                             waiting="The heads appear after the first computation…", when_shown=False)
        controller.trace_ready.connect(self._build_heatmaps)
        self._freezer = LongLivedFreezer(controller, self)  # no collector pauses of 100 ms
        self._dock("shapes", "Shapes", self.shapes, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.shell.add_later("params", "Parameters && memory", lambda: parameters_page(self),
                             Qt.DockWidgetArea.BottomDockWidgetArea, waiting="Opening the parameters…")
        add_wired_docks(self)  # Weights, Layers, Generation
        self.lab = LabDock(self)  # the head lab: a tab among the tables, built when first shown

        self._key_help: KeyHelpOverlay | None = None  # made when first asked for (?, F1)
        self.help_dialog: HelpDialog | None = None
        self.compare_window: CompareWindow | None = None  # View → Compare models, made when opened
        self.export_run = None  # the ExportRun of the last export (shell/export_run.py)
        self._presenter = Presenter(self)
        self._default_layout_pending = False
        self._placed = False  # a saved geometry was restored: the window goes where it was
        app = QApplication.instance()
        self._app_look = (app.palette(), app.styleSheet())  # given back when the window closes
        self._theme = theme_named(prefs.value("theme", DEFAULT_THEME) if prefs else DEFAULT_THEME)
        self._applied: Theme | None = None

        self.actions: dict[str, QAction] = {}
        self.compute_gate = ComputeGate(self)  # a costly restored config waits to be asked for
        self._gate_after_paint = False
        build_menus(self)
        self.describe_qt_parts()
        self.set_theme(self._theme, remember=False)
        self.set_reduced_motion(prefs.value("reduced_motion", False, bool) if prefs else False,
                                remember=False)
        controller.config_changed.connect(self._remember_config)
        if prefs is not None:
            for warning in prefs.warnings:
                self.statusBar().showMessage(warning, 10_000)
            prefs.save_failed.connect(self.statusBar().showMessage)  # a failed save stays in sight

    # layout --------------------------------------------------------------------
    def _dock(self, key: str, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        return self.shell.add(key, title, widget, area)

    def describe_qt_parts(self) -> None:
        """Name the buttons Qt makes on its own (see shell.docks.name_qt_parts). Tab bars
        appear when docks are tabbed, so this runs after each layout."""
        name_qt_parts(self)

    def apply_default_layout(self) -> None:
        """The everyday layout (first launch and "reset layout"): see shell.layouts."""
        if not self._presenter.active:
            # everything the everyday window has is shown again, whatever hid it
            self.controls.set_advanced_visible(True)
            self.variant_scroll.setVisible(True)
            layouts.apply_default(self)

    def apply_presentation_layout(self, area: QRect | None = None) -> None:
        layouts.apply_presentation(self, area or self.geometry(), HIDDEN_DOCKS)

    def set_title_bars(self, visible: bool) -> None:
        self.shell.set_title_bars(visible)

    def sizeHint(self) -> QSize:
        return QSize(1280, 720)

    def restore_layout(self) -> None:
        if self.prefs is not None:
            geometry, state = self.prefs.load_layout()
            if geometry is not None:
                self._placed = self.restoreGeometry(geometry)
            if state is not None and self.restoreState(state):
                return
        if self.isVisible():
            self.apply_default_layout()
        else:  # sizes set before the window is shown are guesses: arrange once, at its real size
            self._default_layout_pending = True

    def _first_placement(self) -> None:
        """No saved place and no size asked for: the whole free screen, maximised (the
        panels need it on a 1024×768 or 1280×720 screen; a larger one gives the stage room)."""
        self._placed = True
        self.setGeometry(self._presenter.available_area())
        self.setWindowState(self.windowState() | Qt.WindowState.WindowMaximized)

    def showEvent(self, event) -> None:
        if not self._placed and not self.testAttribute(Qt.WidgetAttribute.WA_Resized):
            self._first_placement()
        self._placed = True
        super().showEvent(event)
        if not self._presenter.active and not self.isMaximized() and not self.isFullScreen():
            area = self._presenter.available_area()
            if not area.contains(self.geometry()):  # a 1280×720 default on a 1024×768 screen
                self.setGeometry(fit_on_screen(self.geometry(), area))
        if self._default_layout_pending:
            self._default_layout_pending = False
            self.apply_default_layout()

    def compute_after_first_frame(self) -> None:
        """Open the compute gate once the first frame is on screen. Opened in the event loop's
        first turn, it came before the frame (X answers the window's mapping later), and the
        threads it starts (torch's import, or the early engine's answer and the heads'
        modules) held the interpreter lock while the window drew: the frame came 0.3-0.7 s
        after the window was mapped on two cores."""
        self._gate_after_paint = True
        QTimer.singleShot(FIRST_FRAME_WAIT_MS, self._open_compute_gate)

    def _open_compute_gate(self) -> None:
        if self._gate_after_paint:
            self._gate_after_paint = False
            self.compute_gate.start()

    def after_first_paint(self) -> None:
        """What the first frame can do without, each in an event-loop turn of its own."""
        if self._gate_after_paint:  # a zero timer from the paint runs once the frame is flushed
            QTimer.singleShot(0, self._open_compute_gate)
        later = self.controller.later
        later.schedule("weights_available", self.weights_panel.learn_availability)
        # the panels behind tabs once the first trace is drawn: built while torch and the heads'
        # modules were still importing on other threads, a panel's turn shared the interpreter
        # with them and held the loop 400 ms for 90 ms of its own work
        if self.controller.trace is not None:
            self._build_behind_tabs()
        else:  # or once the first run has failed: torch is loaded either way
            for said in (self.controller.trace_ready, self.controller.trace_failed):
                said.connect(self._build_behind_tabs, Qt.ConnectionType.SingleShotConnection)

    def _build_behind_tabs(self, *_trace) -> None:
        for key in BEHIND_TABS:
            if key in self.shell.waiting():
                self.controller.later.schedule(("build", key), lambda k=key: self.shell.built(k))

    # look ---------------------------------------------------------------------------
    @property
    def theme(self) -> Theme:
        return self._theme

    def set_theme(self, theme: Theme | str, remember: bool = True) -> None:
        """Light or dark, for the whole application; remembered in the preferences."""
        self._theme = theme_named(theme) if isinstance(theme, str) else theme
        if self._theme is not self._applied:  # re-styling every widget is not free
            self._applied = self._theme
            apply_theme(QApplication.instance(), self._theme)
        self.actions[f"theme_{self._theme.name}"].setChecked(True)
        if remember and self.prefs is not None:
            self.prefs.set_value("theme", self._theme.name)

    def toggle_theme(self) -> None:
        self.set_theme(other_theme(self._theme))

    def set_reduced_motion(self, reduced: bool, remember: bool = True) -> None:
        self.stage_view.set_reduced_motion(bool(reduced))
        action = self.actions["reduced_motion"]
        action.blockSignals(True)  # a reflection of the state, not a new request
        action.setChecked(bool(reduced))
        action.blockSignals(False)
        if remember and self.prefs is not None:
            self.prefs.set_value("reduced_motion", bool(reduced))

    @property
    def presenting(self) -> bool:
        return self._presenter.active

    def set_presentation(self, on: bool) -> None:
        """Full screen with projector type and the advanced controls tucked away
        (on), or back to the window exactly as it was (off)."""
        on = bool(on)
        if on == self._presenter.active:
            return
        if on:
            self.heatmaps.set_presenting(True)  # before the layout, so the maps get their sizes
            self.stage_view.set_presenting(True)
            self._presenter.enter()
            self.stage_view.diagram.set_type_floor(QApplication.font().pointSizeF())
        else:
            self.stage_view.diagram.set_type_floor(None)
            self._presenter.leave()
            self.heatmaps.set_presenting(False)
            self.stage_view.set_presenting(False)
        code = self.actions["toggle_code"]
        code.blockSignals(True)  # a reflection of what presentation did
        code.setChecked(self.stage_view.code_visible)
        code.blockSignals(False)
        self.actions["presentation"].blockSignals(True)
        self.actions["presentation"].setChecked(on)
        self.actions["presentation"].blockSignals(False)
        self.actions["leave_presentation"].setEnabled(on)

    # help -----------------------------------------------------------------------------
    @property
    def key_help(self) -> KeyHelpOverlay:
        """The shortcuts card over the window; built the first time it is opened (it
        watches every event the window gets, to follow its size)."""
        if self._key_help is None:
            from mha_explorer.qt.shell.key_help import KeyHelpOverlay

            self._key_help = KeyHelpOverlay(self)
        return self._key_help

    def show_key_help(self) -> None:
        self.key_help.open()

    def show_help(self) -> HelpDialog:
        if self.help_dialog is None:
            from mha_explorer.qt.shell.help_dialog import HelpDialog

            self.help_dialog = HelpDialog(self)
        self.help_dialog.show()
        self.help_dialog.raise_()
        return self.help_dialog

    def show_compare(self) -> CompareWindow:
        """Every trained model side by side on one text, in a window of its own (made when
        first opened; it closes with this window)."""
        if self.compare_window is None:
            from mha_explorer.qt.trained.compare_window import CompareWindow

            self.compare_window = CompareWindow(self.controller, self.controller.jobs, self)
            self.compare_window.resize(self.width() * 9 // 10, self.height() * 9 // 10)
        self.compare_window.show()
        self.compare_window.raise_()
        self.compare_window.activateWindow()
        return self.compare_window

    def show_about(self) -> AboutDialog:
        from mha_explorer.qt.shell.about_dialog import AboutDialog  # the install records: when asked

        dialog = AboutDialog(self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog

    # the heads panel ---------------------------------------------------------------
    def preload_heads(self) -> None:
        """Import the heads panel's modules on a helper thread while torch loads on the jobs
        thread: the first trace then finds pyqtgraph and numpy loaded instead of stopping the
        event loop to import them (about a second on two busy cores) before the heatmaps show.
        Only classes are defined there; the panel itself is built on the GUI thread."""
        if "heatmaps" in self.shell.waiting() and HEADS_MODULE not in sys.modules:
            threading.Thread(target=_import_quietly, args=(HEADS_MODULE,),
                             name="mha-explorer-preload", daemon=True).start()

    @property
    def heatmaps(self):
        """The HeatmapPanel, built on first use."""
        if "heatmaps" in self.shell.waiting():
            self.shell.built("heatmaps")
            self.controller.trace_ready.disconnect(self._build_heatmaps)
            if self.controller.trace is not None:
                self.docks["heatmaps"].widget().refresh()
        return self.docks["heatmaps"].widget()

    def _make_heatmaps(self) -> QWidget:
        from mha_explorer.qt.heads.heads_panel import HeatmapPanel  # HEADS_MODULE

        return HeatmapPanel(self.controller)

    def _build_heatmaps(self, _trace: Trace | None = None) -> None:
        self.heatmaps  # noqa: B018 - the property builds it

    # the panels built after the first paint ----------------------------------------------
    @property
    def params(self):
        """The ParamsPanel (on the parameters page, built on first use)."""
        self.shell.built("params")
        return self.params_panel

    @property
    def kv_compare(self):
        """The KV-cache comparison (on the parameters page, built on first use)."""
        self.shell.built("params")
        return self.kv_table

    @property
    def layers_panel(self):
        return self.shell.built("layers")

    @property
    def generation_panel(self):
        return self.shell.built("generation")

    # persistence ---------------------------------------------------------------
    def _remember_config(self, cfg) -> None:
        if self.prefs is not None:
            self.prefs.save_config(cfg)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.set_presentation(False)  # so the saved layout and the font are the everyday ones
        self.controller.shutdown()
        self.lab.shutdown()
        if self.prefs is not None:
            self.prefs.save_layout(self.saveGeometry(), self.saveState())
            self.prefs.save_config(self.controller.config)
            self.prefs.sync()
        app = QApplication.instance()
        palette, sheet = self._app_look
        app.setStyleSheet(sheet)  # the application looks as it did before this window
        app.setPalette(palette)
        super().closeEvent(event)


def _import_quietly(name: str) -> None:
    """A head start only: a failure here is met again, and reported, where the module is used.
    torch's libraries are mapped first (as the jobs thread does): the dynamic loader takes one
    library at a time, and an extension module imported here while libtorch was being mapped
    waited for the loader holding the interpreter lock, which stopped the window 200 ms."""
    map_torch_libraries()
    with contextlib.suppress(Exception):  # the GUI thread's own import raises it in context
        importlib.import_module(name)
