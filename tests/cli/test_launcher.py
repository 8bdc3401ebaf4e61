"""The ``mha-explorer`` command starts the early engine (torch loading in a process of its
own) before anything heavy is imported, only when a window will open, and never leaves it
behind when none does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mha_explorer import launcher
from mha_explorer.cli import SUBCOMMANDS, build_parser

REPO = Path(__file__).resolve().parents[2]

# the launcher run with EarlyEngine.start recorded: what was imported when it was called,
# then whether the process it would have started was closed
PROBE = r"""
import json, sys
import mha_explorer.qt.early_engine as early_engine

calls = []

class Recorded:
    closed = False
    def close(self):
        Recorded.closed = True

def start(cls):
    calls.append(sorted(m for m in ("mha_explorer.cli", "mha_explorer.core", "PySide6", "numpy")
                        if m in sys.modules))
    return Recorded()

early_engine.EarlyEngine.start = classmethod(start)
from mha_explorer import launcher
try:
    code = launcher.main(sys.argv[1:])
except SystemExit as stop:  # --help prints and leaves through argparse
    code = stop.code
print(json.dumps({"starts": calls, "closed": Recorded.closed, "code": code}))
"""


def run_probe(tmp_path, *argv: str) -> dict:
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=path), cwd=tmp_path, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_window_launch_starts_the_early_engine_before_the_command_line_loads(tmp_path):
    # a bad flag: the words say "window", the parser then refuses them (exit 2)
    report = run_probe(tmp_path, "--heads", "many")
    assert report["starts"] == [[]]  # nothing of the command line, the core, Qt or numpy yet
    assert report["code"] == 2 and report["closed"]  # refused: the process is not left behind


@pytest.mark.parametrize("argv", [["shapes"], ["--heads", "4", "shapes"], ["--help"],
                                  ["shapes", "--list-presets"]])
def test_a_command_without_a_window_starts_no_early_engine(tmp_path, argv):
    report = run_probe(tmp_path, *argv)
    assert report["starts"] == [] and report["code"] == 0


def test_the_launcher_knows_every_command_and_flag_that_opens_no_window():
    assert set(launcher.COMMANDS) == {command.NAME for command in SUBCOMMANDS}
    assert build_parser().parse_args(["shapes", "--list-presets"]).list_presets
    assert not launcher.opens_window(["--seed", "3", "tiles"])
    assert launcher.opens_window(["--heads", "4", "--present"])
