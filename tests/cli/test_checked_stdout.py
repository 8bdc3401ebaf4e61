"""Every command that prints goes through the checked writer: a full or closed standard
output is one line on stderr and exit 1, never a traceback or a silent success."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

FULL_STDOUT = (
    "import errno, os, sys\n"
    "class Full:\n"
    "    def write(self, text): raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))\n"
    "    def flush(self): pass\n"
    "    def fileno(self): return 1\n"
    "sys.stdout = Full()\n"
    "from mha_explorer.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n")
CLOSED_STDOUT = ("import os, sys\nos.close(1)\nsys.stdout = None\n"
                 "from mha_explorer.cli import main\nsys.exit(main(sys.argv[1:]))\n")

COMMANDS = {
    "decode": ["decode", "--d-model", "64", "--heads", "4", "--prompt", "4", "--steps", "2"],
    "tiles": ["tiles", "--d-model", "32", "--heads", "2", "--batch", "1", "--seq", "16"],
    "tiles-json": ["tiles", "--d-model", "32", "--heads", "2", "--batch", "1", "--seq", "16", "--json"],
    "heads": ["heads", "--layer", "1", "--sentence", "the cat sat", "--json"],
}


def run_with(program: str, argv: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-c", program, *argv], capture_output=True,
                          text=True, timeout=300, env=env)


def one_error_line(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("mha-explorer: error: ") and result.stderr.count("\n") == 1, \
        result.stderr


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_full_stdout_is_one_line_and_exit_1(name):
    result = run_with(FULL_STDOUT, COMMANDS[name])
    one_error_line(result)
    assert "No space left on device" in result.stderr


@pytest.mark.parametrize("name", ["decode", "tiles", "heads"])
def test_a_closed_stdout_is_one_line_and_exit_1(name):
    one_error_line(run_with(CLOSED_STDOUT, COMMANDS[name]))
