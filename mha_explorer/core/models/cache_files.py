"""The app's cache of converted model files: where it lives, how a file gets there
whole, and how it is proved unaltered (no torch).

A converted file is large and written in pieces (tensor by tensor), so it is
streamed into a hidden temporary file beside its final name, flushed to disk
(fsync) and only then renamed over the target (os.replace). Ctrl+C, a cancel, a
full disk or any error removes the temporary file, so a reader finds the whole
file or none. The app's own folders and the files in them are never symbolic
links: a link planted there is refused, not followed.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from mha_explorer.core.models.progress import Cancel, Progress, stop_if_asked
from mha_explorer.core.system.safe_files import check_target

CACHE_ENV = "MHA_EXPLORER_CACHE_DIR"  # a folder used instead of <user cache>/mha-explorer
APP_FOLDER = "mha-explorer"
PART_SUFFIX = ".part"
HASH_CHUNK = 8 << 20  # bytes hashed between two looks at cancel (about 7 ms)
LOCK_FILE = ".lock"
LOCK_POLL_SECONDS = 0.1


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """The app's cache folder: $MHA_EXPLORER_CACHE_DIR, else $XDG_CACHE_HOME/mha-explorer,
    else ~/.cache/mha-explorer (XDG: a relative XDG_CACHE_HOME is ignored)."""
    environ = os.environ if environ is None else environ
    override = environ.get(CACHE_ENV, "").strip()
    if override:
        return Path(override).expanduser().absolute()
    xdg = environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / APP_FOLDER


def own_folder(path: Path) -> Path:
    """Make ``path`` (and its parents) and return it; OSError when it, a link or not a
    folder, cannot hold the app's files. Only the last part must not be a link: a user's
    ~/.cache may well be one."""
    with suppress(FileExistsError):  # something not a folder is there: explained just below
        path.mkdir(parents=True, exist_ok=True)
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        raise OSError(errno.ELOOP, f"{path} is a symbolic link; the cache is never written through a link",
                      str(path))
    if not stat.S_ISDIR(mode):
        raise OSError(errno.ENOTDIR, f"{path} is not a folder", str(path))
    return path


def _sync_folder(folder: Path) -> None:
    """Make a rename durable; a system that cannot open a folder for this is fine."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """A binary file to write ``path`` through: on a clean exit it replaces ``path`` whole;
    on any exception (Cancelled and KeyboardInterrupt too) it is removed and ``path`` is as
    it was."""
    check_target(path)  # a link, a folder or a device there is refused before any work
    fd, part = tempfile.mkstemp(prefix=f".{path.name}.", suffix=PART_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(part, 0o644)  # mkstemp makes it private; a cache file is an ordinary file
        check_target(path)  # again: something may have been planted meanwhile
        os.replace(part, path)  # replaces a link planted now, never its target
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(part)
        raise
    _sync_folder(path.parent)


def _part_name(target: str) -> re.Pattern[str]:
    """How ``atomic_file`` names the part files of ``target``: "." + name + "." + the random
    letters tempfile.mkstemp chooses + ".part"."""
    return re.compile(rf"\.{re.escape(target)}\.[a-z0-9_]+{re.escape(PART_SUFFIX)}")


def remove_dead_parts(folder: Path, targets: Iterable[str]) -> list[str]:
    """Remove the part files a killed writer left for ``targets`` in ``folder``; their names.

    Call it only while holding the folder's lock (``folder_lock``): every writer of the app
    holds it, so no part file there can belong to one still at work. Only regular files
    named exactly as ``atomic_file`` names them go: never a link (unlinked names are never
    followed), a folder or anything else, never a file of any other name; the folder is
    opened once without following a link, so one swapped in meanwhile is not entered."""
    patterns = [_part_name(target) for target in targets]
    removed = []
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return removed
    try:
        for name in os.listdir(fd):
            if not any(p.fullmatch(name) for p in patterns):
                continue
            with suppress(OSError):
                if stat.S_ISREG(os.lstat(name, dir_fd=fd).st_mode):
                    os.unlink(name, dir_fd=fd)
                    removed.append(name)
    finally:
        os.close(fd)
    return removed


@contextmanager
def folder_lock(folder: Path, cancel: Cancel | None = None, waiting: Progress | None = None,
                text: str = "") -> Iterator[None]:
    """Hold ``folder``'s lock file while writing into it, so a second process (the window and
    the command line at once) waits for the first one's files instead of racing it. Polls,
    so ``cancel`` is heard while waiting; ``waiting(0, text)`` is said once if it has to wait.
    Without fcntl (not on Unix) there is no lock."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told and waiting is not None:
                    waiting(0.0, text)
                told = True
                stop_if_asked(cancel)
                time.sleep(LOCK_POLL_SECONDS)
        yield
    finally:
        os.close(fd)  # releases the lock


def sha256_file(path: Path, progress: Progress | None = None, cancel: Cancel | None = None,
                text: str = "") -> str:
    """The file's SHA-256 (hex), reading it in chunks, cancellable between them."""
    digest = hashlib.sha256()
    total = max(os.path.getsize(path), 1)
    done = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(HASH_CHUNK):
            stop_if_asked(cancel)
            digest.update(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done / total, text)
    return digest.hexdigest()
