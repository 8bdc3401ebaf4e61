"""Opening the window: the QApplication, the preferences and the first config.

Nothing here imports torch: the window is on screen first, and the worker
thread loads torch afterwards.
"""

from __future__ import annotations

import sys

from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import QApplication

from mha_explorer import assets
from mha_explorer.core.config import MHAConfig
from mha_explorer.qt.compute import run_engine
from mha_explorer.qt.controller import Controller
from mha_explorer.qt.early_engine import EarlyEngine, FirstRunEarly
from mha_explorer.qt.shell.interrupts import exit_code, quit_on_sigint
from mha_explorer.qt.shell.main_window import MainWindow
from mha_explorer.qt.shell.settings import Preferences
from mha_explorer.qt.stall_watchdog import watchdog_from_env


def application() -> QApplication:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("MHA Explorer")
    app.setOrganizationName("MHA Explorer")
    app.setDesktopFileName("mha-explorer")
    icon = QPixmap()
    if icon.loadFromData(assets.read_bytes("mha-explorer.svg")):
        app.setWindowIcon(QIcon(icon))
    return app


def build_window(config: MHAConfig, prefs: Preferences | None = None, *,
                 stage: str | None = None, budget_bytes: int | None = None,
                 early: EarlyEngine | None = None) -> MainWindow:
    """``early``: a process importing torch since launch, which computes the first trace."""
    run = FirstRunEarly(early, run_engine) if early is not None else None
    controller = Controller(config, budget_bytes=budget_bytes, run=run)
    window = MainWindow(controller, prefs)
    window.restore_layout()
    if stage:
        controller.set_stage(stage)
    return window


def run_app(config: MHAConfig, prefs: Preferences, *, stage: str | None = None,
            theme: str | None = None, present: bool = False,
            early: EarlyEngine | None = None) -> int:
    """Open the window on ``config`` and run the event loop; returns the exit code.
    ``theme``: chosen on the command line, remembered like the menu's choice; ``early``:
    see build_window."""
    app = application()
    sigint = quit_on_sigint(app)  # Ctrl+C quits with 130, from before the window exists
    watchdog_from_env(app)  # MHA_EXPLORER_STALL_MS: every longer stop of the event loop, on stderr
    window = build_window(config, prefs, stage=stage, early=early)
    if theme:
        window.set_theme(theme)
    window.show()
    if early is not None:
        early.go()  # its torch import, if it has not begun: the window's own imports are done
    if present:
        window.set_presentation(True)
    window.compute_after_first_frame()  # torch loads after the first frame is on screen
    return exit_code(sigint, app.exec())
