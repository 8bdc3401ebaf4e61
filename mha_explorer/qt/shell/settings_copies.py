"""The private copies the preferences work on, in folders of the temporary directory.

QSettings saves by renaming a temporary file over its path, so it is never given the real
file: each window makes a folder of its own (COPY_PREFIX) with a copy of the preferences,
holds a lock file in it (flock) for as long as its process lives, and removes the folder
when it ends. A window that was killed never removes its folder; the next start finds the
folders whose lock is free and removes them. Nothing here reads or writes the preferences
themselves (see settings.py).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time

try:
    import fcntl
except ImportError:  # no flock: the copies of killed windows are left to the system's cleaning
    fcntl = None

COPY_PREFIX = "mha-explorer-settings-"  # the private copies' folders in the temporary directory
COPY_LOCK = "in-use.lock"  # held (flock) by the living process; the system lets go when it dies
STALE_AFTER_S = 60  # a folder this young may be one whose window is still taking its lock
UNLOCKED_STALE_AFTER_S = 24 * 3600  # a folder without a lock file (an older version's)


def discard_copy(holder: list, folder: str, lock_fd: int | None) -> None:
    holder.clear()  # the QSettings on the copy goes first, so it cannot write after this
    shutil.rmtree(folder, ignore_errors=True)
    if lock_fd is not None:
        os.close(lock_fd)


def lock_copy(folder: str) -> int | None:
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
