"""The ``mha-explorer`` command's first step.

When the command will open the window, the early engine (torch loading in a process of its
own, qt/early_engine.py) starts here, before the command line's modules and the core under
them are imported: about 70 ms sooner, and torch's 2 s are the first launch's whole wait for
its heatmaps. Whether a window opens is guessed from the words alone; a wrong guess costs
nothing: a command that needs no window closes the process, and a window the guess missed
starts its own.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

# the commands and flags that end without a window (tests/cli check them against the parser)
COMMANDS = ("compare", "decode", "export", "heads", "lab", "lens", "patch", "pictures", "shapes", "tiles")
WINDOWLESS_FLAGS = ("-h", "--help", "--list-presets")


def opens_window(argv: Sequence[str]) -> bool:
    return not any(arg in COMMANDS or arg in WINDOWLESS_FLAGS for arg in argv)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    early = None
    if opens_window(argv):
        from mha_explorer.qt.early_engine import EarlyEngine

        early = EarlyEngine.start()
    from mha_explorer.cli import main as cli_main

    return cli_main(argv, early=early)
