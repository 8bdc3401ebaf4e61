"""Preferences kept between runs (window layout, last config, theme, motion).

The file location is injectable (``--settings FILE`` or MHA_EXPLORER_SETTINGS),
so tests never touch the user's own preferences. A file that cannot be read, that
belongs to something else, or that another version wrote is ignored with a
warning rather than breaking the start, and it is never written to or cleared:
the preferences of that session are kept in memory only.

QSettings never owns the real path: it saves by writing a temporary file and
renaming it over the path, which would turn a device, a pipe or a link into a
regular file. It works on a private copy instead (in a folder of the temporary
directory, locked while this process lives, so a later start removes the folders of
windows that were killed); the real file is read here
without blocking (a FIFO never hangs the start) and written through safe_files
(whole, never through a link, never over anything but a regular file). A save
that fails is reported once through ``save_failed`` and ``warnings``.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import stat
import sys
import tempfile
import time
import weakref
from pathlib import Path

from PySide6.QtCore import QByteArray, QCoreApplication, QObject, QSettings, QTimer, Signal

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.system import safe_files
from mha_explorer.core.system.env import SETTINGS_ENV, settings_from_env
from mha_explorer.core.system.typed_input import TypedInputError, whole_number
from mha_explorer.qt.shell.settings_ini import ini_values, same_value, without_serialised_types

try:
    import fcntl
except ImportError:  # no flock: the copies of killed windows are left to the system's cleaning
    fcntl = None

log = logging.getLogger(__name__)
FORMAT_VERSION = 1
MAX_FILE_BYTES = 4 << 20  # far beyond any preferences file; a bigger one is not ours
AUTOSAVE_MS = 1500  # changes reach the file soon after they stop, not on every keystroke
COPY_PREFIX = "mha-explorer-settings-"  # the private copies' folders in the temporary directory
COPY_LOCK = "in-use.lock"  # held (flock) by the living process; the system lets go when it dies
STALE_AFTER_S = 60  # a folder this young may be one whose window is still taking its lock
UNLOCKED_STALE_AFTER_S = 24 * 3600  # a folder without a lock file (an older version's)
__all__ = ["FORMAT_VERSION", "SETTINGS_ENV", "Preferences", "default_settings_file"]


def default_settings_file() -> Path:
    """Where QSettings keeps an INI file for this application and user (computed
    here: constructing QSettings on it would already open the file)."""
    if sys.platform.startswith("win") and os.environ.get("APPDATA"):
        base = Path(os.environ["APPDATA"])
    else:
        xdg = os.environ.get("XDG_CONFIG_HOME", "")
        base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".config"
    return base / "MHA Explorer" / "mha-explorer.ini"


def read_regular_file(path: Path) -> bytes | None:
    """The bytes of ``path``; None when it does not exist. OSError when it is not a small
    regular file (safe_files.read_regular: non-blocking, no link followed)."""
    try:
        return safe_files.read_regular(path, MAX_FILE_BYTES)
    except FileNotFoundError:
        return None


def _discard_copy(holder: list, folder: str, lock_fd: int | None) -> None:
    holder.clear()  # the QSettings on the copy goes first, so it cannot write after this
    shutil.rmtree(folder, ignore_errors=True)
    if lock_fd is not None:
        os.close(lock_fd)


def _lock_copy(folder: str) -> int | None:
    """Hold the folder's lock for as long as this process lives (None where flock is missing)."""
    if fcntl is None:
        return None
    try:
        fd = os.open(os.path.join(folder, COPY_LOCK), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        return None  # a system without locks: the folder is still removed when the window closes
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a folder just made: nobody else holds it
    except OSError:
        os.close(fd)
        return None
    return fd


def _stale(path: str, now: float) -> bool:
    """Whether a copy folder's window is gone: its lock is free, or, without a lock file, it
    has been untouched for a day. Never a link, never another user's, never a young one."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or now - info.st_mtime < STALE_AFTER_S:
        return False
    try:
        fd = os.open(os.path.join(path, COPY_LOCK), os.O_RDWR | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return now - info.st_mtime > UNLOCKED_STALE_AFTER_S
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # its window is alive
    finally:
        os.close(fd)
    return True


def remove_stale_copies(folder: str | None = None) -> list[str]:
    """Remove the copy folders that killed windows left in the temporary directory (their
    finaliser never ran); returns their paths."""
    if fcntl is None:
        return []
    folder = folder or tempfile.gettempdir()
    removed, now = [], time.time()
    try:
        entries = [e.path for e in os.scandir(folder) if e.name.startswith(COPY_PREFIX)]
    except OSError:
        return []
    for path in entries:
        if _stale(path, now):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


class Preferences(QObject):
    save_failed = Signal(str)  # one line, once per run of failures; for the status bar

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        super().__init__()
        self.warnings: list[str] = []
        self._memory: dict[str, object] | None = None  # set when the file is ignored
        self._save_error: str | None = None
        self._timer: QTimer | None = None
        self._changed: set[str] = set()  # keys this window set since it last read or wrote the file
        self._location = self._choose_location(path)
        remove_stale_copies()
        self._copy_dir = tempfile.mkdtemp(prefix=COPY_PREFIX)
        lock_fd = _lock_copy(self._copy_dir)
        self._copy = Path(self._copy_dir) / "settings.ini"
        data = self._read_location()
        self._saved = data or b""
        if data:
            self._copy.write_bytes(self._readable(data))
        self._qs = QSettings(str(self._copy), QSettings.Format.IniFormat)
        self._holder = [self._qs]
        weakref.finalize(self, _discard_copy, self._holder, self._copy_dir, lock_fd)
        if self._memory is None:
            self._check_contents()

    def _readable(self, data: bytes) -> bytes:
        """The file's bytes for QSettings to read, without the values it would deserialise
        as Qt types (said once; the next save leaves them out)."""
        clean, dropped = without_serialised_types(data)
        if dropped:
            message = (f"{self.file_name}: ignored {len(dropped)} value(s) this app does not write "
                       f"(serialised Qt types), first {dropped[0][:40]!r}")
            log.warning(message)
            self.warnings.append(message)
        return clean

    # where, and is it ours ----------------------------------------------------------
    def _choose_location(self, path) -> Path:
        if path is not None and str(path).strip():
            return Path(path).expanduser()
        if path is not None:  # a blank name: nothing to read or write, whatever the variable says
            self._ignore(f"the settings file name {str(path)!r} is empty")
            return default_settings_file()
        env_path, problem = settings_from_env()
        if problem:
            log.warning(problem)
            self.warnings.append(problem)
        return env_path or default_settings_file()

    def _read_location(self) -> bytes | None:
        if self._memory is not None:
            return None
        problem = safe_files.target_problem(self._location)
        if problem is not None and not problem.endswith("read-only"):  # read-only: read, report saves
            self._ignore(problem)
            return None
        try:
            return read_regular_file(self._location)
        except OSError as exc:
            self._ignore(f"the settings file {self._location} could not be read "
                         f"({safe_files.describe(exc)})")
            return None

    def _check_contents(self) -> None:
        keys = self._qs.allKeys()
        name = self.file_name
        if self._qs.status() != QSettings.Status.NoError:
            self._ignore(f"the settings file {name} could not be read; using defaults")
        elif keys and not self._qs.contains("version"):
            self._ignore(f"{name} is not an MHA Explorer settings file; using defaults")
        elif keys and self._int("version") != FORMAT_VERSION:
            self._ignore(f"the settings file {name} is from another version; using defaults")

    @property
    def file_name(self) -> str:
        return str(self._location)

    @property
    def ignored(self) -> bool:
        """True when the file was not trusted: it is left exactly as it was."""
        return self._memory is not None

    def _ignore(self, message: str) -> None:
        # never clear() it: it may be another program's file, or a newer version's
        message += " (the file is left as it is; this session's preferences are not saved)"
        log.warning(message)
        self.warnings.append(message)
        self._memory = {}

    def _get(self, key: str):
        return self._memory.get(key) if self._memory is not None else self._qs.value(key)

    def _set(self, key: str, value) -> None:
        if self._memory is not None:
            self._memory[key] = value
            return
        if same_value(self._qs.value(key), value):
            return  # not a change of this window's: another window's newer value may stand
        self._qs.setValue(key, value)
        self._changed.add(key)
        self._schedule_save()

    def _int(self, key: str) -> int | None:
        try:
            return whole_number(str(self._qs.value(key)))
        except TypedInputError:
            return None

    # the last config -----------------------------------------------------------
    def load_config(self) -> MHAConfig | None:
        raw = self._get("config")
        if raw is None:
            return None
        try:
            data = json.loads(str(raw))
        except ValueError:
            return self._config_ignored("it is not valid JSON")
        except RecursionError:  # thousands of brackets deep: never a config of ours
            return self._config_ignored("it is nested too deeply to be a configuration")
        if not isinstance(data, dict):
            return self._config_ignored("it is not a set of named settings")
        try:
            return MHAConfig.from_dict(data)
        except ConfigError as exc:
            return self._config_ignored(exc.message)  # a sentence for a person already
        except (ValueError, TypeError):
            return self._config_ignored("a setting has a value of the wrong kind")

    def _config_ignored(self, reason: str) -> None:
        """One plain sentence naming the file and what is wrong (the file is left as it is;
        the next save replaces the configuration with a good one)."""
        message = " ".join(f"the configuration saved in {self.file_name} is ignored: {reason}; "
                           "using defaults".split())
        log.warning(message)
        self.warnings.append(message)

    def save_config(self, cfg: MHAConfig) -> None:
        self._set("version", FORMAT_VERSION)
        self._set("config", json.dumps(cfg.to_dict()))

    # window layout ---------------------------------------------------------------
    def load_layout(self) -> tuple[QByteArray | None, QByteArray | None]:
        geometry, state = self._get("window/geometry"), self._get("window/state")
        ok = lambda v: v if isinstance(v, QByteArray) and not v.isEmpty() else None  # noqa: E731
        return ok(geometry), ok(state)

    def save_layout(self, geometry: QByteArray, state: QByteArray) -> None:
        self._set("version", FORMAT_VERSION)
        self._set("window/geometry", geometry)
        self._set("window/state", state)

    # small flags -----------------------------------------------------------------
    def value(self, key: str, default, kind=str):
        raw = self._get(key)
        if raw is None:
            return default
        try:
            if kind is bool:
                return raw if isinstance(raw, bool) else str(raw).lower() in ("true", "1")
            return kind(raw)
        except (TypeError, ValueError):
            return default

    def set_value(self, key: str, value) -> None:
        self._set("version", FORMAT_VERSION)  # so a file of ours is always recognised
        self._set(key, value)

    # saving ------------------------------------------------------------------------
    def _schedule_save(self) -> None:
        if QCoreApplication.instance() is None:
            return  # no event loop to wait for: sync() saves
        if self._timer is None:
            self._timer = QTimer(self)
            self._timer.setSingleShot(True)
            self._timer.setInterval(AUTOSAVE_MS)
            self._timer.timeout.connect(self.sync)
        self._timer.start()

    @property
    def save_error(self) -> str | None:
        """Why the last save failed (None after a good one)."""
        return self._save_error

    def sync(self) -> bool:
        """Write the preferences to the file if they changed; False when that failed
        (reported once through ``save_failed`` and ``warnings``)."""
        if self._memory is not None:
            return True
        if self._timer is not None:
            self._timer.stop()
        self._take_others_values()
        self._qs.sync()
        try:
            data = self._copy.read_bytes() if self._qs.status() == QSettings.Status.NoError else None
            if data is None:
                raise OSError(errno.EIO, "the preferences could not be serialised")
            if data != self._saved:
                self._location.parent.mkdir(parents=True, exist_ok=True)
                safe_files.write_bytes(self._location, data)
                self._saved = data
            self._changed.clear()
        except OSError as exc:
            self._report_save_failure(exc)
            return False
        self._save_error = None
        return True

    def _take_others_values(self) -> None:
        """Another window sharing the file saved since this one read or wrote it: its values
        stay for every key this window has not changed itself, so a save here writes only
        this window's own changes over them (merged per key, not the whole state)."""
        try:
            theirs = read_regular_file(self._location)
        except OSError:
            return  # the save below reports what is wrong with the file
        if theirs is None or theirs == self._saved:
            return
        other = self._copy.with_name("other.ini")
        try:
            other.write_bytes(without_serialised_types(theirs)[0])
            found = dict(ini_values(other))
        except OSError:
            return
        finally:
            other.unlink(missing_ok=True)
        if not same_value(found.get("version"), FORMAT_VERSION):
            return  # not a file of this version's: nothing of it to keep
        for key, value in found.items():
            if key not in self._changed:
                self._qs.setValue(key, value)
        self._saved = theirs  # seen: its values are merged into this window's

    def _report_save_failure(self, exc: OSError) -> None:
        message = (f"preferences not saved to {self._location}: {safe_files.describe(exc)}; "
                   "they are kept for this session only")
        message = " ".join(message.splitlines())
        if self._save_error is None:  # once per run of failures, not on every change
            log.warning(message)
            self.warnings.append(message)
            self.save_failed.emit(message)
        self._save_error = message
