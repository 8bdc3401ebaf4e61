"""Files written whole or not at all, never through a link, never over anything
but a regular file.

Every byte goes to a temporary file beside the target, is flushed to disk
(fsync) and only then renamed over the target (os.replace). A full disk, a
failed writer or a killed process therefore leaves the earlier file as it was
and no truncated one: at worst a hidden ``.NAME.*.part`` file that the next
write does not touch. Every failure is an OSError whose message names the file.
"""

from __future__ import annotations

import errno
import glob
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

PART_SUFFIX = ".part"
_CHUNK = 1 << 20
_live_parts: set[str] = set()  # temporary files being written now (removed on any failure)


class UnsafeTarget(OSError):
    """The target exists and is something a save must not replace or follow."""


class ReadOnlyTarget(UnsafeTarget, PermissionError):
    """The target is a regular file its owner made read-only: respected, even though
    a rename could replace it."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a pipe (FIFO)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def target_problem(path: str | os.PathLike) -> str | None:
    """Why ``path`` must not be written, or None when it is a regular file or missing.
    Never opens the path (a FIFO or a device never blocks or wakes here)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path} cannot be examined: {exc.strerror or exc}"
    if stat.S_ISLNK(mode):
        return f"{path} is a symbolic link; files are never written through a link"
    if not stat.S_ISREG(mode):
        return f"{path} is {_kind(mode)}, not a regular file"
    if not mode & 0o222 or not os.access(path, os.W_OK):  # the bits bind the superuser too
        return f"{path} is read-only"
    return None


def check_target(path: str | os.PathLike) -> None:
    """Raise UnsafeTarget when ``path`` must not be written (see target_problem)."""
    problem = target_problem(path)
    if problem is None:
        return
    if problem.endswith("read-only"):
        raise ReadOnlyTarget(errno.EACCES, problem, str(path))
    raise UnsafeTarget(errno.EEXIST, problem, str(path))


def _write_all(fd: int, data: bytes) -> None:
    """Every byte of ``data`` to ``fd``; a short write goes on, an error raises."""
    view = memoryview(data)
    while view:
        done = os.write(fd, view[:_CHUNK])
        if done <= 0:
            raise OSError(errno.EIO, "the system wrote nothing")
        view = view[done:]


def _new_file_mode() -> int:
    """The mode a plainly created file would get (0666 less the umask)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable; some systems cannot open a folder: fine."""
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
def _part_file(path: Path) -> Iterator[tuple[int, str]]:
    """An open temporary file beside ``path``, removed unless the caller renamed it."""
    fd, part = tempfile.mkstemp(prefix=f".{path.name}.", suffix=PART_SUFFIX, dir=path.parent)
    _live_parts.add(part)
    try:
        yield fd, part
    finally:
        _live_parts.discard(part)
        with suppress(OSError):
            os.close(fd)
        with suppress(FileNotFoundError):  # gone: renamed into place
            os.unlink(part)


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` as the whole of ``path``, atomically; returns the path.

    OSError (the file named in its message) when the target is a link, not a
    regular file, read-only, or any write, flush or rename fails.
    """
    path = Path(path)
    check_target(path)
    try:
        with _part_file(path) as (fd, part):
            _write_all(fd, bytes(data))
            os.fsync(fd)
            mode = os.stat(path).st_mode & 0o7777 if path.exists() else _new_file_mode()
            os.fchmod(fd, mode)
            check_target(path)  # again: something may have been planted meanwhile
            os.replace(part, path)  # replaces a link planted now, never its target
    except UnsafeTarget:
        raise
    except OSError as exc:
        raise OSError(exc.errno, f"could not write {path}: {exc.strerror or exc}", str(path)) from exc
    _sync_folder(path.parent)
    _remove_stale_parts(path)
    return path


def _remove_stale_parts(path: Path) -> None:
    """Part files of ``path`` that a killed process left behind (mkstemp's eight
    random characters between the name and the suffix): the file is whole now."""
    for part in path.parent.glob(f".{glob.escape(path.name)}.{'?' * 8}{PART_SUFFIX}"):
        if str(part) in _live_parts:
            continue
        with suppress(OSError):
            if stat.S_ISREG(os.lstat(part).st_mode):
                os.unlink(part)


def read_regular(path: str | os.PathLike, limit: int) -> bytes:
    """The whole of a small regular file, read without blocking or following a link: a pipe
    (whose open would wait for a writer for ever), a device, a folder or a link is refused,
    and so is a file over ``limit`` bytes before any of it is read. OSError naming the file."""
    path = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(exc.errno, f"{path} is a symbolic link; it is not followed", str(path)) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"{path} is {_kind(info.st_mode)}, not a regular file", str(path))
        if info.st_size > limit:
            raise OSError(errno.EFBIG, f"{path} is {info.st_size:,} bytes, more than the {limit:,} it "
                          "can be", str(path))
        chunks, size = [], 0
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise OSError(errno.EFBIG, f"{path} grew past {limit:,} bytes while it was read", str(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_text(path: str | os.PathLike, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def discard_unfinished() -> None:
    """Remove every temporary file still being written (an interrupted save)."""
    for part in list(_live_parts):
        with suppress(OSError):
            os.unlink(part)
        _live_parts.discard(part)


def describe(exc: OSError) -> str:
    """One line for a person: the file and the system's reason."""
    text = exc.strerror or str(exc)
    if exc.filename and str(exc.filename) not in text:
        text = f"{exc.filename}: {text}"
    return text
