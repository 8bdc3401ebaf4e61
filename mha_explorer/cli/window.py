"""``mha-explorer`` with no subcommand: open the window.

The flags are read and the config is built here, before Qt opens a display, so a
typo is one line on stderr; the window receives plain values (qt.shell.app never
imports the CLI).
"""

from __future__ import annotations

import argparse

from mha_explorer.cli.common import THEME_NAMES, config_from_args
from mha_explorer.cli.flag_types import path_text
from mha_explorer.core.config import MHAConfig
from mha_explorer.core.stages.catalog import CLASSIC, STAGES


def add_window_flags(parser: argparse.ArgumentParser) -> None:
    added = [s for s in STAGES if s not in CLASSIC]
    parser.add_argument("--stage", choices=tuple(STAGES), metavar="STAGE",
                        help=f"the stage to open on: {', '.join(CLASSIC)}, or a step a config "
                        f"adds ({', '.join(added)}); one it lacks opens its nearest counterpart")
    parser.add_argument("--present", action="store_true",
                        help="start in presentation mode: full screen, projector-sized type, "
                        "advanced controls tucked away (F11 or Esc leaves)")
    parser.add_argument("--theme", choices=THEME_NAMES,
                        help="light or dark (default: the one used last); remembered")
    parser.add_argument("--settings", metavar="FILE", type=path_text,
                        help="read and keep preferences in this file instead of the user's")


def run(args: argparse.Namespace, early=None) -> int:
    """``early``: the early engine the launcher started; one is started here otherwise."""
    from mha_explorer.qt.early_engine import EarlyEngine

    if early is None:  # first, so torch loads there while Qt and the window load here
        early = EarlyEngine.start()
    try:
        return _open_window(args, early)
    finally:
        if early is not None:
            early.close()  # a bad flag, or the window computed without it


def _open_window(args: argparse.Namespace, early) -> int:
    from mha_explorer.core.system.env import settings_flag
    from mha_explorer.qt.shell.app import run_app  # Qt is imported only to open the window
    from mha_explorer.qt.shell.settings import Preferences

    prefs = Preferences(settings_flag(args.settings))  # a blank or folder name: exit 2
    config = config_from_args(args, prefs.load_config() or MHAConfig())
    return run_app(config, prefs, stage=args.stage, theme=args.theme, present=args.present,
                   early=early)
