"""What a search over every command's flags, the environment and the files beside an
export found, kept as checks: each case here ended in a traceback or a failure to
print before it was fixed. The broad search itself is the property test at the end:
any flag of any command with any of the hostile values is exit 0 with output, or one
line on stderr and exit 2 (the stress profile tries many more combinations)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st
from test_cli_invalid import assert_one_line_error, run_main

from mha_explorer.cli import build_parser

EXPORT = ["export", "--stage", "input", "--format", "svg", "--no-tables", "--d-model", "8", "--heads", "2",
          "--seq", "2", "--batch", "1"]


def test_an_export_folder_name_too_long_for_the_system_is_one_line(tmp_path):
    message = assert_one_line_error(*run_main([*EXPORT, "--out", str(tmp_path / ("x" * 300))]))
    assert "--out" in message and "too long" in message


def test_a_rows_file_nested_thousands_deep_beside_an_export_is_not_its_business(tmp_path):
    rows = tmp_path / "rows.json"
    rows.write_text("[" * 100_000 + "]" * 100_000)  # not the sidecar an export writes: left alone
    rc, out, err = run_main([*EXPORT, "--out", str(tmp_path)])
    assert rc == 0, err
    assert rows.read_text().startswith("[[[")


def test_a_terminal_that_cannot_show_every_character_still_gets_the_table():
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "PYTHONIOENCODING": "ascii:strict"}
    done = subprocess.run([sys.executable, "-m", "mha_explorer", "shapes", "--d-model", "64", "--heads", "4"],
                          capture_output=True, timeout=120, env=env)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    assert b"MHA Explorer \\u2014 MHA: D=64" in done.stdout  # the dash written as its escape


# the broad search ------------------------------------------------------------------------
HOSTILE = ["", " ", "0", "-1", "3", "64,64", "1,0", "1.5", "nan", "１２", "9" * 40, "\x01", "\x1b[2J", "a\nb",
           "\udcff", "🙂", "none", "x" * 5000, "-", "%s", "1_0", "8 8"]
LIGHT = {  # commands that answer without torch or a model, and their smallest good arguments
    "shapes": ["shapes", "--json"],
    "decode": ["decode", "--d-model", "16", "--heads", "2", "--prompt", "4", "--steps", "2"],
    "tiles": ["tiles", "--d-model", "16", "--heads", "2", "--seq", "8", "--batch", "1"],
}


def _flags(command: str) -> list[str]:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    return [a.option_strings[-1] for a in commands[command]._actions
            if a.option_strings and a.nargs != 0 and a.option_strings[0] != "-h"]


FLAG_VALUES = st.sampled_from(sorted(LIGHT)).flatmap(lambda c: st.tuples(
    st.just(c), st.lists(st.tuples(st.sampled_from(_flags(c)), st.sampled_from(HOSTILE)), max_size=3)))


@settings(deadline=None)
@given(FLAG_VALUES)
def test_any_hostile_flag_values_are_an_answer_or_one_line(case):
    command, pairs = case
    argv = list(LIGHT[command]) + [x for pair in pairs for x in pair]
    rc, out, err = run_main(argv)
    if rc == 2:
        message = assert_one_line_error(rc, out, err)
        assert all(c.isprintable() for c in message), message
    else:
        assert rc == 0 and out and "Traceback" not in err, (argv, rc, err)
        assert not any("\ud800" <= c <= "\udfff" for c in out)  # no text that is not UTF-8 printed back
