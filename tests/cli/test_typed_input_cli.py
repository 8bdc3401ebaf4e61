"""Text that is not UTF-8 and numbers with a comma, on every command that reads them.

A command-line argument that is not UTF-8 reaches Python with each bad byte as a lone
surrogate (U+DC80 + byte); ``os.fsdecode`` makes exactly that string here, so
``main([...])`` sees what a real ``$'\\xff'`` gives it. Such text is refused in one
line naming the flag and the byte, exit 2, before any model loads; a file or folder
name keeps its bytes. A comma in a number is refused the same way, everywhere.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from test_cli_invalid import assert_one_line_error, run_main

NOT_UTF8 = os.fsdecode(b"a \xff b")  # 'a \udcff b'

# every surface the text reaches: the trained models' tokenizers, the decoder's prompt,
# the window's start, the export's word hashing, tiles and shapes (which printed it back)
TEXT_SURFACES = {
    "heads minilm": (["heads", "--weights", "minilm-l6", "--layer", "1", "--sentence", NOT_UTF8],
                     "--sentence"),
    "heads gemma": (["heads", "--weights", "gemma3-270m", "--layer", "1", "--sentence", NOT_UTF8],
                    "--sentence"),
    "decode gemma": (["decode", "--weights", "gemma3-270m", "--text", NOT_UTF8], "--text"),
    "export": (["export", "--sentence", NOT_UTF8, "--out", "{tmp}/out"], "--sentence"),
    "tiles": (["tiles", "--sentence", NOT_UTF8], "--sentence"),
    "shapes": (["shapes", "--sentence", NOT_UTF8, "--json"], "--sentence"),
    "shapes, flag=value": (["shapes", f"--sentence={NOT_UTF8}"], "--sentence"),
    "decode config": (["decode", "--sentence", NOT_UTF8], "--sentence"),
    "a choice": (["shapes", "--dtype", NOT_UTF8], "--dtype"),
    "a preset": (["shapes", "--preset", NOT_UTF8], "--preset"),
    "a number": (["shapes", "--seq", NOT_UTF8], "--seq"),
    "lab task": (["lab", "--task", NOT_UTF8], "--task"),
    "export stage": (["export", "--stage", NOT_UTF8, "--out", "{tmp}/out"], "--stage"),
    "the command": ([NOT_UTF8], "COMMAND"),
}


@pytest.mark.parametrize("case", list(TEXT_SURFACES))
def test_text_that_is_not_utf8_is_one_line_naming_flag_and_byte(case, tmp_path):
    argv, flag = TEXT_SURFACES[case]
    message = assert_one_line_error(*run_main([a.replace("{tmp}", str(tmp_path)) for a in argv]))
    assert f"argument {flag}:" in message and "not UTF-8" in message and "\\xff" in message, message
    assert not (tmp_path / "out").exists()


def test_a_real_argument_of_raw_bytes_is_refused_by_the_process(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "LC_ALL": "C.UTF-8"}
    argv = [sys.executable.encode(), b"-m", b"mha_explorer", b"tiles", b"--sentence", b"a \xff b"]
    done = subprocess.run(argv, capture_output=True, timeout=120, env=env)
    assert done.returncode == 2 and done.stdout == b""
    err = done.stderr.decode()
    assert err.count("\n") == 1 and "argument --sentence" in err and "\\xff" in err, err


def test_the_window_refuses_such_a_sentence_before_it_opens(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "QT_QPA_PLATFORM": "offscreen",
           "MHA_EXPLORER_SETTINGS": str(tmp_path / "settings.ini")}
    done = subprocess.run([sys.executable.encode(), b"-m", b"mha_explorer", b"--sentence", b"\xff"],
                          capture_output=True, timeout=120, env=env)
    assert done.returncode == 2, done.stderr
    assert b"argument --sentence" in done.stderr and b"\\xff" in done.stderr


def test_a_folder_name_that_is_not_utf8_keeps_its_bytes_on_a_strict_terminal(tmp_path):
    """A UTF-8 locale's standard output refuses lone surrogates: the name goes out as the
    bytes it came in as, not as a failure to write after the files are made."""
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "PYTHONIOENCODING": "utf-8:strict",
           "QT_QPA_PLATFORM": "offscreen"}
    out = os.fsencode(tmp_path) + b"/pictures \xff"
    done = subprocess.run([sys.executable.encode(), b"-m", b"mha_explorer", b"export", b"--out", out,
                           b"--stage", b"input", b"--format", b"svg", b"--no-tables", b"--d-model", b"8",
                           b"--heads", b"2", b"--seq", b"2"], capture_output=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert os.listdir(os.fsencode(tmp_path)) == [b"pictures \xff"]
    assert out + b"/01-input.svg" in done.stdout.splitlines()


COMMA_NUMBERS = {
    "shapes --seq": (["shapes", "--seq", "64,64", "--json"], "--seq"),
    "shapes --d-model": (["shapes", "--d-model", "1,024"], "--d-model"),
    "decode --steps": (["decode", "--steps", "1,0"], "--steps"),
    "decode --prompt": (["decode", "--prompt", "1,0"], "--prompt"),
    "a variant size": (["shapes", "--window", "1,0"], "--window"),
    "lab --steps": (["lab", "--task", "copy", "--steps", "1,0"], "--steps"),
    "lab --d-model": (["lab", "--task", "copy", "--d-model", "6,4"], "--d-model"),
    "heads --layer": (["heads", "--layer", "1,0", "--sentence", "the cat"], "layer"),
    "export --size": (["export", "--size", "1,920x1080", "--out", "{tmp}/out"], "--size"),
    "tiles --block": (["tiles", "--block", "6,4,6,4"], "--block"),
}


@pytest.mark.parametrize("case", list(COMMA_NUMBERS))
def test_a_comma_inside_a_number_is_refused_in_one_line(case, tmp_path):
    argv, flag = COMMA_NUMBERS[case]
    message = assert_one_line_error(*run_main([a.replace("{tmp}", str(tmp_path)) for a in argv]))
    assert flag in message, message


@pytest.mark.parametrize("value", ["１２", "١٢", "0x10", "1e3", "+-1", "1__0"])
def test_a_number_in_other_digits_or_forms_is_refused(value):
    message = assert_one_line_error(*run_main(["shapes", "--seq", value]))
    assert "--seq" in message and "not a whole number" in message


def test_python_s_own_digit_grouping_still_reads(capsys):
    rc, out, err = run_main(["shapes", "--seq", "1_0", "--d-model", "64", "--heads", "4", "--json"])
    assert rc == 0 and '"seq": 10' in out, err
