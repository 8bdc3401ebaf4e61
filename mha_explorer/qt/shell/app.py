"""Opening the window: the QApplication, the preferences and the first config.

Nothing here imports torch: the window is on screen first, and the worker
thread loads torch afterwards.
"""

from __future__ import annotations

import argparse
import sys

from PySide6.QtCore import QTimer
from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import QApplication

from mha_explorer import assets
from mha_explorer.core.config import MHAConfig
from mha_explorer.core.env import settings_flag
from mha_explorer.qt.controller import Controller
from mha_explorer.qt.shell.interrupts import exit_code, quit_on_sigint
from mha_explorer.qt.shell.main_window import MainWindow
from mha_explorer.qt.shell.settings import Preferences


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
                 stage: str | None = None, budget_bytes: int | None = None) -> MainWindow:
    controller = Controller(config, budget_bytes=budget_bytes)
    window = MainWindow(controller, prefs)
    window.restore_layout()
    if stage:
        controller.set_stage(stage)
    return window


def run_app(args: argparse.Namespace) -> int:
    from mha_explorer.cli import config_from_args

    # flags are checked before Qt opens a display, so a typo is one line on stderr
    prefs = Preferences(settings_flag(args.settings))  # a blank or folder name: exit 2
    config = config_from_args(args, prefs.load_config() or MHAConfig())
    app = application()
    sigint = quit_on_sigint(app)  # Ctrl+C quits with 130, from before the window exists
    window = build_window(config, prefs, stage=args.stage)
    if getattr(args, "theme", None):
        window.set_theme(args.theme)  # chosen on the command line: remembered like the menu's
    window.show()
    if getattr(args, "present", False):
        window.set_presentation(True)
    QTimer.singleShot(0, window.controller.start)  # torch loads after the first paint
    return exit_code(sigint, app.exec())
