"""A settings file the app can always open, and one that two windows share.

A saved configuration nested thousands of brackets deep is ignored with one warning
(the window opens on the defaults and keeps the file's other preferences); two windows
writing one file keep each other's changes, key by key. Every file is the test's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from PySide6.QtCore import QByteArray

from mha_explorer.core.config import MHAConfig
from mha_explorer.qt.shell.settings import FORMAT_VERSION, Preferences


def _ini_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def test_a_config_nested_thousands_deep_is_ignored_once_and_the_rest_is_kept(qapp, tmp_path):
    path = tmp_path / "settings.ini"
    deep = "[" * 100_000 + "]" * 100_000
    path.write_text(f"[General]\nversion={FORMAT_VERSION}\ntheme=dark\nconfig={_ini_string(deep)}\n")
    prefs = Preferences(str(path))
    assert prefs.load_config() is None
    assert len(prefs.warnings) == 1 and len(prefs.warnings[0].splitlines()) == 1
    assert str(path) in prefs.warnings[0] and "nested" in prefs.warnings[0]
    assert prefs.value("theme", "light") == "dark"  # the file is still this app's, and read
    cfg = MHAConfig(d_model=64, n_heads=4)
    prefs.save_config(cfg)
    assert prefs.sync()
    assert Preferences(str(path)).load_config() == cfg  # the next save replaces the bad value


def test_two_windows_on_one_file_keep_each_other_s_changes(qapp, tmp_path):
    path = tmp_path / "settings.ini"
    first = Preferences(str(path))
    first.set_value("theme", "light")
    first.save_config(MHAConfig(d_model=64, n_heads=4))
    assert first.sync()
    early, late = Preferences(str(path)), Preferences(str(path))  # both open on that file
    early.set_value("theme", "dark")  # the earlier window's change, saved at once
    assert early.sync()
    late_cfg = MHAConfig(d_model=96, n_heads=6)
    late.save_config(late_cfg)  # the later window saves its whole state when it closes
    late.save_layout(QByteArray(b"geometry"), QByteArray(b"state"))
    late.set_value("theme", late.value("theme", "light"))  # what it read at its start
    assert late.sync()
    again = Preferences(str(path))
    assert again.value("theme", "") == "dark"
    assert again.load_config() == late_cfg
    assert again.load_layout() == (QByteArray(b"geometry"), QByteArray(b"state"))
    # and a later change of the same key by either window is the one that stays
    early.set_value("theme", "light")
    assert early.sync()
    assert Preferences(str(path)).value("theme", "") == "light"
    assert Preferences(str(path)).load_config() == late_cfg  # the earlier window did not undo it



def test_a_saved_sentence_that_is_not_utf8_is_ignored_with_its_bytes_named(qapp, tmp_path):
    path = tmp_path / "settings.ini"
    saved = MHAConfig(seq=2, tokens=("a", "b")).to_dict()
    saved["tokens"] = ["a", "\udcff"]  # JSON's "\udcff": a byte that was never UTF-8
    path.write_text(f"[General]\nversion={FORMAT_VERSION}\nconfig={_ini_string(json.dumps(saved))}\n")
    prefs = Preferences(str(path))
    assert prefs.load_config() is None
    assert len(prefs.warnings) == 1 and "not UTF-8" in prefs.warnings[0] and "\\xff" in prefs.warnings[0]


CRAFTED = {  # a list declaring 2**31 - 1 entries, as QSettings would read it with QDataStream
    "as written": r"@Variant(\0\0\0\t\x7f\xff\xff\xff)",
    "quoted": r'"@Variant(\0\0\0\t\x7f\xff\xff\xff)"',
    "its @ escaped": r"\x40Variant(\0\0\0\t\x7f\xff\xff\xff)",
    "in a list": r"dark, @Variant(\0\0\0\t\x7f\xff\xff\xff)",
    "on the next line": "\\\n@Variant(\\0\\0\\0\\t\\x7f\\xff\\xff\\xff)",
}
OPEN_AND_READ = """
import sys
from PySide6.QtCore import QCoreApplication
app = QCoreApplication([])
from mha_explorer.qt.shell.settings import Preferences
prefs = Preferences(sys.argv[1])
print(prefs.value("theme", "light"), prefs.load_config() is not None, len(prefs.warnings))
"""


@pytest.mark.parametrize("case", list(CRAFTED))
def test_a_serialised_qt_value_never_ends_the_process(tmp_path, case):
    """Such a value ended the process with std::bad_alloc before the window opened, at every
    start; it is left out (said once) and the rest of the file is read."""
    path = tmp_path / "settings.ini"
    cfg = MHAConfig(d_model=64, n_heads=4)
    path.write_text(f"[General]\nversion={FORMAT_VERSION}\nconfig={_ini_string(json.dumps(cfg.to_dict()))}\n"
                    f"theme={CRAFTED[case]}\n")
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run([sys.executable, "-c", OPEN_AND_READ, str(path)], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.split() == ["light", "True", "1"]  # the theme left out, the config read
