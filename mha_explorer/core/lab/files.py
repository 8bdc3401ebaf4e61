"""Reading and writing the lab's files safely (no torch: the window uses it too).

Reading never blocks and never follows a link: the path is examined with lstat
before it is opened (a FIFO, a device or a folder is refused by name), it is
opened with O_NOFOLLOW | O_NONBLOCK, the open file is checked again, and a file
that changes while it is read is refused. Writing goes through
``mha_explorer.core.system.safe_files`` (unique temporary file, fsync, rename).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

from mha_explorer.core.system import safe_files

CHUNK = 1 << 20  # bytes read between two cancel checks


class RunFileError(ValueError):
    """A file or folder that cannot be written or read; the message is one line for a person."""


def refuse_links(path: Path) -> None:
    if path.is_symlink():
        raise RunFileError(f"{path} is a symbolic link; lab files are never written or read through one")


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` as the whole of ``path`` (see safe_files.write_bytes); a link, a
    FIFO or a folder in its place is refused, and a failure leaves the old file."""
    path = Path(path)
    refuse_links(path.parent)
    try:
        safe_files.write_bytes(path, data)
    except OSError as exc:
        raise RunFileError(safe_files.describe(exc)) from None


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a pipe (FIFO)"),
                       (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


class OpenFile:
    """A regular file opened for reading without blocking or following a link; ``size``
    as it was when opened. Use as a context manager."""

    def __init__(self, path: Path, limit: int):
        self.path = path
        name = path.name
        try:
            refuse_links(path.parent)
            before = os.lstat(path)
        except FileNotFoundError:
            raise RunFileError(f"{name} is missing from {path.parent}; is this a saved lab run?") from None
        except OSError as exc:
            raise RunFileError(f"{name} cannot be examined: {exc.strerror or exc}") from None
        if not stat.S_ISREG(before.st_mode):
            raise RunFileError(f"{name} is {_kind(before.st_mode)}, not a regular file")
        if before.st_size > limit:
            raise RunFileError(f"{name} is {before.st_size:,} bytes, more than a lab run's "
                               f"{limit:,} allow")
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise RunFileError(f"{name} cannot be opened: {exc.strerror or exc}") from None
        self.stat = os.fstat(self.fd)
        if (self.stat.st_ino, self.stat.st_dev) != (before.st_ino, before.st_dev) or not stat.S_ISREG(
                self.stat.st_mode):
            os.close(self.fd)
            raise RunFileError(f"{name} was replaced while it was opened")
        self.size = self.stat.st_size

    def __enter__(self) -> OpenFile:
        return self

    def __exit__(self, *exc) -> None:
        os.close(self.fd)

    def read_at(self, offset: int, count: int, check: Callable[[], None] | None = None) -> bytes:
        """Exactly ``count`` bytes from ``offset``, a chunk at a time (``check`` between)."""
        parts, done = [], 0
        while done < count:
            if check is not None:
                check()
            part = os.pread(self.fd, min(CHUNK, count - done), offset + done)
            if not part:
                raise RunFileError(f"{self.path.name} ends early: it is shorter than it says")
            parts.append(part)
            done += len(part)
        return b"".join(parts)

    def sha256(self, check: Callable[[], None] | None = None) -> str:
        digest, offset = hashlib.sha256(), 0
        while offset < self.size:
            if check is not None:
                check()
            part = os.pread(self.fd, min(CHUNK, self.size - offset), offset)
            if not part:
                break
            digest.update(part)
            offset += len(part)
        return digest.hexdigest()

    def unchanged(self) -> None:
        """Refuse a file that was written to (or replaced) since it was opened."""
        now = os.fstat(self.fd)
        try:
            there = os.lstat(self.path)
        except OSError:
            there = None
        same = (now.st_size, now.st_mtime_ns) == (self.stat.st_size, self.stat.st_mtime_ns)
        if not same or there is None or (there.st_ino, there.st_dev) != (now.st_ino, now.st_dev):
            raise RunFileError(f"{self.path.name} changed while it was read; open the run again "
                               "once nothing writes to it")


def read_regular(path: Path, limit: int, check: Callable[[], None] | None = None) -> bytes:
    """The whole of a regular file of at most ``limit`` bytes (see OpenFile)."""
    with OpenFile(path, limit) as f:
        data = f.read_at(0, f.size, check)
        if os.pread(f.fd, 1, f.size):
            raise RunFileError(f"{path.name} grew while it was read")
        f.unchanged()
    return data
