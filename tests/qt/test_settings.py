"""Preferences: a bad settings file never breaks the start and is never destroyed;
a good one gives back exactly what was saved.

Every file here is the test's own (tmp_path); the user's preferences are never
touched.
"""

from __future__ import annotations

import errno
import json
import os
import random
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PySide6.QtCore import QByteArray

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.system import safe_files
from mha_explorer.qt.shell.settings import FORMAT_VERSION, SETTINGS_ENV, Preferences


def ini_string(value: str) -> str:
    """``value`` written as QSettings writes a string into an INI file."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def random_bytes(seed: int, n: int = 600) -> bytes:
    rng = random.Random(seed)
    return bytes(rng.randrange(256) for _ in range(n))


BAD_FILES = {
    "random bytes": random_bytes(1),
    "random bytes with NULs and brackets": bytes(range(256)) * 2 + b"[[[=\n==\x00",
    "config fails validation": (
        f"[General]\nversion={FORMAT_VERSION}\nconfig="
        + ini_string(json.dumps({"d_model": 10, "n_heads": 3})) + "\n").encode(),
    "config is not JSON": f"[General]\nversion={FORMAT_VERSION}\nconfig={{not json\n".encode(),
    "config is a JSON list": (f"[General]\nversion={FORMAT_VERSION}\nconfig="
                              + ini_string("[512, 8]") + "\n").encode(),
    "config has an unknown key": (
        f"[General]\nversion={FORMAT_VERSION}\nconfig="
        + ini_string(json.dumps({"d_model": 64, "heads": 4})) + "\n").encode(),
    "config has wrong types": (
        f"[General]\nversion={FORMAT_VERSION}\nconfig="
        + ini_string(json.dumps({"d_model": "64", "tokens": [1, 2]})) + "\n").encode(),
    "a foreign INI": b"[General]\nfoo=bar\nuser=alice\n[core]\neditor=vim\n",
    "another version": b"[General]\nversion=99\nconfig=whatever\n[window]\ngeometry=x\n",
    "a version that is not a number": b"[General]\nversion=abc\n",
}
# the file itself cannot be trusted: it must be left exactly as it was
UNTRUSTED = {"random bytes", "random bytes with NULs and brackets", "a foreign INI",
             "another version", "a version that is not a number"}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_file_gives_defaults_and_a_warning(qapp, tmp_path, case):
    path = tmp_path / "settings.ini"
    path.write_bytes(BAD_FILES[case])
    prefs = Preferences(str(path))
    assert prefs.load_config() is None
    assert prefs.warnings, "no warning for a bad settings file"
    for warning in prefs.warnings:
        assert warning and len(warning.splitlines()) == 1, warning
    assert prefs.load_layout() == (None, None)
    assert prefs.value("theme", "light") == "light"


@pytest.mark.parametrize("case", sorted(UNTRUSTED))
def test_an_untrusted_file_is_never_written_or_cleared(qapp, tmp_path, case):
    path = tmp_path / "settings.ini"
    path.write_bytes(BAD_FILES[case])
    prefs = Preferences(str(path))
    assert prefs.ignored and str(path) in prefs.warnings[0]
    # a whole session's worth of saving
    cfg = MHAConfig(d_model=64, n_heads=4)
    prefs.save_config(cfg)
    prefs.save_layout(QByteArray(b"geometry"), QByteArray(b"state"))
    prefs.set_value("theme", "dark")
    prefs.sync()
    assert prefs.load_config() == cfg  # kept for the session, in memory
    assert prefs.value("theme", "light") == "dark"
    del prefs
    assert path.read_bytes() == BAD_FILES[case]


@pytest.mark.parametrize("case", ["config fails validation", "config is not JSON"])
def test_a_bad_saved_config_in_our_own_file_is_replaced_by_the_next_save(qapp, tmp_path, case):
    path = tmp_path / "settings.ini"
    path.write_bytes(BAD_FILES[case])
    prefs = Preferences(str(path))
    assert prefs.load_config() is None and not prefs.ignored
    cfg = MHAConfig(d_model=48, n_heads=6, n_kv_heads=2)
    prefs.save_config(cfg)
    prefs.sync()
    again = Preferences(str(path))
    assert again.load_config() == cfg and again.warnings == []


def test_a_directory_as_the_settings_file(qapp, tmp_path):
    prefs = Preferences(str(tmp_path))
    assert prefs.load_config() is None and prefs.warnings
    prefs.save_config(MHAConfig())
    prefs.sync()
    assert tmp_path.is_dir()


@given(data=st.binary(max_size=400))
def test_any_bytes_never_raise(qapp, data):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "settings.ini")
        with open(path, "wb") as f:
            f.write(data)
        prefs = Preferences(path)
        cfg = prefs.load_config()
        assert cfg is None or isinstance(cfg, MHAConfig)
        geometry, state = prefs.load_layout()
        assert geometry is None or isinstance(geometry, QByteArray)
        prefs.save_config(MHAConfig())
        prefs.sync()
        if prefs.ignored:
            with open(path, "rb") as f:
                assert f.read() == data


def test_a_missing_file_is_fine_and_silent(qapp, tmp_path):
    prefs = Preferences(str(tmp_path / "new" / "settings.ini"))
    assert prefs.load_config() is None and prefs.warnings == [] and not prefs.ignored
    assert prefs.load_layout() == (None, None)


# --- round trips ---------------------------------------------------------------

CONFIGS = [
    MHAConfig(),
    MHAConfig(d_model=4544, n_heads=71, n_kv_heads=1, bias=False, causal=True),
    MHAConfig(d_model=64, n_heads=8, n_kv_heads=2, batch=3, seq=5, kv_seq=9, causal=True,
              causal_alignment="bottom-right", dtype="bfloat16", device="cpu", seed=2**32 - 1),
    # INI-special characters inside the JSON inside the INI value
    MHAConfig(seq=7, tokens=("a=b", "[General]", ";x", "#y", 'q"uote', "back\\slash", "née,ü")),
]


@pytest.mark.parametrize("cfg", CONFIGS)
def test_config_round_trip(qapp, tmp_path, cfg):
    path = str(tmp_path / "settings.ini")
    prefs = Preferences(path)
    prefs.save_config(cfg)
    prefs.sync()
    again = Preferences(path)
    assert again.load_config() == cfg
    assert again.warnings == [] and not again.ignored


words = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=6).filter(
    lambda w: w == w.strip() and w.split() == [w])  # what sentence_tokens can produce


@given(tokens=st.lists(words, min_size=1, max_size=5))
def test_any_sentence_round_trips(qapp, tokens):
    cfg = MHAConfig(seq=len(tokens), tokens=tuple(tokens))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "settings.ini")
        prefs = Preferences(path)
        prefs.save_config(cfg)
        prefs.sync()
        assert Preferences(path).load_config() == cfg


def test_layout_round_trip(qapp, tmp_path):
    path = str(tmp_path / "settings.ini")
    geometry = QByteArray(bytes(range(256)))  # every byte value, NUL included
    state = QByteArray(b"\x00\x00\x00\xffstate\n=;[]")
    prefs = Preferences(path)
    prefs.save_layout(geometry, state)
    prefs.sync()
    assert Preferences(path).load_layout() == (geometry, state)


def test_small_values_round_trip_and_bad_ones_give_the_default(qapp, tmp_path):
    path = str(tmp_path / "settings.ini")
    prefs = Preferences(path)
    prefs.set_value("theme", "dark")
    prefs.set_value("motion", False)
    prefs.set_value("speed", "fast")
    prefs.sync()
    again = Preferences(path)
    assert again.warnings == []  # set_value alone still makes a file of ours
    assert again.value("theme", "light") == "dark"
    assert again.value("motion", True, bool) is False
    assert again.value("speed", 1.0, float) == 1.0  # not a number: the default
    assert again.value("missing", 7, int) == 7


def test_the_environment_variable_chooses_the_file(qapp, tmp_path, monkeypatch):
    path = tmp_path / "from-env.ini"
    monkeypatch.setenv(SETTINGS_ENV, str(path))
    prefs = Preferences()
    assert prefs.file_name == str(path)
    prefs.save_config(MHAConfig(d_model=32, n_heads=2))
    prefs.sync()
    assert Preferences(str(path)).load_config() == MHAConfig(d_model=32, n_heads=2)


# --- what is at the path: never replaced unless it is a regular file ---------------------
def make_char_device(folder):
    """A character device node of our own, numbered in the experimental range that no
    driver uses: even a mistaken open could reach nothing."""
    node = folder / "settings.ini"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(240, 0))
    except (PermissionError, AttributeError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    return node


def save_a_session(prefs: Preferences) -> None:
    prefs.save_config(MHAConfig(d_model=64, n_heads=4))
    prefs.save_layout(QByteArray(b"geometry"), QByteArray(b"state"))
    prefs.set_value("theme", "dark")
    prefs.sync()


def test_a_character_device_is_never_replaced(qapp, tmp_path):
    node = make_char_device(tmp_path)
    prefs = Preferences(str(node))
    assert prefs.ignored and "character device" in prefs.warnings[0]
    save_a_session(prefs)
    assert prefs.value("theme", "light") == "dark"  # kept in memory for the session
    assert stat.S_ISCHR(os.lstat(node).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.ini"]  # no stray temp file


def test_a_fifo_neither_hangs_the_start_nor_is_replaced(tmp_path):
    fifo = tmp_path / "settings.ini"
    os.mkfifo(fifo)
    script = ("import sys; from PySide6.QtWidgets import QApplication; app = QApplication([]); "
              "from mha_explorer.qt.shell.settings import Preferences; "
              "from mha_explorer.core.config import MHAConfig; "
              "p = Preferences(sys.argv[1]); p.save_config(MHAConfig()); p.sync(); "
              "print(p.ignored, p.warnings[0])")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": os.getcwd()}
    try:  # an open() of a FIFO with no writer blocks for ever: a generous deadline tells
        result = subprocess.run([sys.executable, "-c", script, str(fifo)], env=env,
                                capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("the settings FIFO blocked the start")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("True ") and "pipe" in result.stdout
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_link_is_refused_and_its_target_untouched(qapp, tmp_path):
    target = tmp_path / "real.ini"
    target.write_text(f"[General]\nversion={FORMAT_VERSION}\ntheme=light\n")
    before = target.read_bytes()
    link = tmp_path / "settings.ini"
    link.symlink_to("real.ini")
    prefs = Preferences(str(link))
    assert prefs.ignored and "symbolic link" in prefs.warnings[0]
    save_a_session(prefs)
    assert link.is_symlink() and target.read_bytes() == before


def test_a_file_turned_into_a_fifo_after_the_start_is_not_replaced(qapp, tmp_path):
    path = tmp_path / "settings.ini"
    prefs = Preferences(str(path))
    prefs.save_config(MHAConfig())
    assert prefs.sync() and path.is_file()
    path.unlink()
    os.mkfifo(path)
    failures = []
    prefs.save_failed.connect(failures.append)
    prefs.save_config(MHAConfig(d_model=64, n_heads=4))
    assert prefs.sync() is False
    assert len(failures) == 1 and "pipe" in failures[0] and str(path) in failures[0]
    assert stat.S_ISFIFO(os.lstat(path).st_mode)


# --- saves that fail are said once, never dropped in silence ----------------------------
def test_a_read_only_file_is_read_and_its_failed_saves_reported_once(qapp, tmp_path):
    path = tmp_path / "settings.ini"
    cfg = MHAConfig(d_model=48, n_heads=6)
    writer = Preferences(str(path))
    writer.save_config(cfg)
    assert writer.sync()
    path.chmod(0o444)
    before = path.read_bytes()
    prefs = Preferences(str(path))
    assert prefs.load_config() == cfg and not prefs.ignored
    failures = []
    prefs.save_failed.connect(failures.append)
    for theme in ("dark", "light", "dark"):
        prefs.set_value("theme", theme)
        assert prefs.sync() is False
    assert len(failures) == 1 and "read-only" in failures[0] and len(failures[0].splitlines()) == 1
    assert failures[0] in prefs.warnings and prefs.save_error
    assert path.read_bytes() == before


def test_a_full_disk_or_read_only_folder_is_reported_and_the_next_good_save_lands(
        qapp, tmp_path, monkeypatch):
    path = tmp_path / "settings.ini"
    prefs = Preferences(str(path))
    failures = []
    prefs.save_failed.connect(failures.append)

    def refused(_fd, _data):
        raise OSError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(safe_files, "_write_all", refused)
    prefs.set_value("theme", "dark")
    assert prefs.sync() is False and not path.exists()
    assert len(failures) == 1 and "Permission denied" in failures[0]
    monkeypatch.undo()
    assert prefs.sync() and prefs.save_error is None
    assert Preferences(str(path)).value("theme", "light") == "dark"


def test_changes_reach_the_file_without_an_explicit_sync(qapp, qtbot, tmp_path):
    path = tmp_path / "settings.ini"
    prefs = Preferences(str(path))
    prefs.set_value("theme", "dark")
    qtbot.waitUntil(lambda: path.exists() and Preferences(str(path)).value("theme", "") == "dark",
                    timeout=10_000)


def test_the_autosave_writes_the_file_off_the_gui_thread(qapp, qtbot, tmp_path, monkeypatch):
    """A write flushed to disk can take a good part of a second on a busy disk: the save that
    follows a change writes on a thread of its own, and its failure is still said once."""
    import threading

    writers, real = [], safe_files.write_bytes

    def writing(path, data):
        writers.append(threading.current_thread())
        return real(path, data)

    monkeypatch.setattr(safe_files, "write_bytes", writing)
    path = tmp_path / "settings.ini"
    prefs = Preferences(str(path))
    failures = []
    prefs.save_failed.connect(failures.append)
    prefs.set_value("theme", "dark")
    qtbot.waitUntil(lambda: path.exists() and Preferences(str(path)).value("theme", "") == "dark",
                    timeout=10_000)
    assert writers and threading.main_thread() not in writers
    path.chmod(0o444)  # the next autosave fails, and says so here
    prefs.set_value("theme", "light")
    qtbot.waitUntil(lambda: bool(failures), timeout=10_000)
    assert len(failures) == 1 and "preferences not saved" in failures[0]
    path.chmod(0o644)
    assert prefs.sync() and Preferences(str(path)).value("theme", "") == "light"


def test_the_window_shows_a_failed_save(qtbot, make_window, tmp_path):
    path = tmp_path / "settings.ini"
    path.write_text(f"[General]\nversion={FORMAT_VERSION}\n")
    path.chmod(0o444)
    window = make_window(settings=path, wait=False)
    window.toggle_theme()
    window.prefs.sync()
    assert "preferences not saved" in window.statusBar().currentMessage()


# --- the variable and the flag ----------------------------------------------------------
@pytest.mark.parametrize("value", ["", "   ", "\t\n", "a folder"])
def test_an_odd_environment_value_warns_and_uses_the_default(qapp, tmp_path, monkeypatch, value):
    config_home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
    monkeypatch.setenv(SETTINGS_ENV, str(tmp_path) if value == "a folder" else value)
    prefs = Preferences()
    assert len(prefs.warnings) == 1 and SETTINGS_ENV in prefs.warnings[0]
    assert "using the default" in prefs.warnings[0] and len(prefs.warnings[0].splitlines()) == 1
    if sys.platform.startswith("linux"):
        assert prefs.file_name == str(config_home / "MHA Explorer" / "mha-explorer.ini")
    prefs.set_value("theme", "dark")
    assert prefs.sync()
    assert tmp_path.is_dir() and sorted(p.name for p in tmp_path.iterdir()) == ["config"]


@pytest.mark.parametrize("value", ["", "  ", "folder"])
def test_a_settings_flag_that_names_no_file_is_exit_2(tmp_path, value, capsys):
    from mha_explorer.cli import main

    rc = main(["--settings", str(tmp_path) if value == "folder" else value])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("mha-explorer: error: argument --settings") \
        and err.count("\n") == 1, err


def test_a_blank_file_name_keeps_preferences_in_memory(qapp, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    prefs = Preferences("   ")
    assert prefs.ignored and len(prefs.warnings) == 1 and "empty" in prefs.warnings[0]
    save_a_session(prefs)
    assert prefs.value("theme", "light") == "dark" and list(tmp_path.iterdir()) == []


KILLED_WINDOW = ("import os, signal, sys; from PySide6.QtWidgets import QApplication; "
                 "app = QApplication([]); "
                 "from mha_explorer.qt.shell.settings import Preferences; "
                 "p = Preferences(sys.argv[1]); print('ready', flush=True); "
                 "os.kill(os.getpid(), signal.SIGKILL if sys.argv[2] == 'kill' else signal.SIGSTOP)")


def _window_process(tmp_path, how: str) -> subprocess.Popen:
    """A process that makes its preferences' copy in ``tmp_path/tmp``, then is killed
    (its finaliser never runs) or stops there, alive."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": os.getcwd(),
           "TMPDIR": str(tmp_path / "tmp")}
    child = subprocess.Popen([sys.executable, "-c", KILLED_WINDOW, str(tmp_path / "settings.ini"), how],
                             env=env, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    return child


def _copies(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("mha-explorer-settings-"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals and flock")
def test_the_copy_a_killed_window_left_is_removed_at_the_next_start_a_living_one_kept(
        qapp, tmp_path, monkeypatch):
    (tmp_path / "tmp").mkdir()
    killed = _window_process(tmp_path, "kill")
    killed.wait(120)
    killed.stdout.close()
    stopped = _window_process(tmp_path, "stop")  # alive (stopped), holding its copy
    try:
        left = _copies(tmp_path / "tmp")
        assert len(left) == 2
        for name in left:  # older than a copy still being made could be
            os.utime(tmp_path / "tmp" / name, (1, 1))
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
        prefs = Preferences(str(tmp_path / "settings.ini"))
        now = _copies(tmp_path / "tmp")
        assert len(now) == 2 and Path(prefs._copy_dir).name in now  # its own, and the living one's
        assert len(set(now) & set(left)) == 1
    finally:
        stopped.kill()
        stopped.wait(120)
        stopped.stdout.close()


@pytest.mark.parametrize("case", [c for c in BAD_FILES if c.startswith("config")])
def test_a_bad_saved_config_is_one_sentence_naming_the_file_not_a_parser_s_words(qapp, tmp_path, case):
    path = tmp_path / "settings.ini"
    path.write_bytes(BAD_FILES[case])
    prefs = Preferences(str(path))
    assert prefs.load_config() is None
    [message] = prefs.warnings
    assert str(path) in message and "\n" not in message
    for internal in ("Expecting", "char ", "column", "Error", "Traceback", "mapping"):
        assert internal not in message, message
    assert path.read_bytes() == BAD_FILES[case]  # nothing the person had is overwritten
