"""The command line: ``mha-explorer`` opens the window; subcommands serve scripts.

Each subcommand is one module with ``NAME``, ``register(subparsers)`` and
``run(args) -> exit code``; adding one is that module and a line in SUBCOMMANDS.
Bad input is one line on stderr and exit code 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mha_explorer.cli import compare, decode, export, heads, lab, lens, patch, pictures, shapes, tiles, window
from mha_explorer.cli.common import (
    EXIT_USAGE,
    Parser,
    UsageError,
    add_config_flags,
    config_from_args,
    fail,
    one_line,
)
from mha_explorer.console import OutputError, report_interrupt, report_io_error
from mha_explorer.core.config import ConfigError

SUBCOMMANDS = (
    shapes,
    export,
    heads,
    decode,
    tiles,
    lab,
    compare,
    pictures,
    patch,
    lens,
)

if TYPE_CHECKING:
    from mha_explorer.qt.early_engine import EarlyEngine

__all__ = ["EXIT_USAGE", "add_config_flags", "build_parser", "config_from_args", "main", "one_line"]


def build_parser() -> Parser:
    parser = Parser(
        prog="mha-explorer",
        description="Multi-head attention, stage by stage. With no command, opens the window.",
    )
    add_config_flags(parser)
    window.add_window_flags(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for command in SUBCOMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None, early: EarlyEngine | None = None) -> int:
    """``early``: the early engine the launcher started (mha_explorer/launcher.py), for the
    window; closed here when no window opens."""
    try:
        return _run_command(argv, early)
    finally:
        if early is not None:
            early.close()  # no window, a bad flag, or the window is done with it


def _run_command(argv: Sequence[str] | None, early: EarlyEngine | None) -> int:
    parser = build_parser()
    commands = {command.NAME: command.run for command in SUBCOMMANDS}
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            return window.run(args, early)
        if args.command not in commands:
            return fail(f"unknown command {args.command}")
        return commands[args.command](args)
    except UsageError as exc:
        return fail(str(exc))
    except ConfigError as exc:
        return fail(exc.message)
    except BrokenPipeError:
        return 0
    except OutputError as exc:  # a closed or full stdout: one line, exit 1
        return report_io_error(exc)
    except KeyboardInterrupt:  # Ctrl+C: one line, exit 130, no traceback
        return report_interrupt()
