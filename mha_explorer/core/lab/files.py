"""Atomic writes that never follow a symbolic link (no torch: the window uses it too)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


class RunFileError(ValueError):
    """A file or folder that cannot be written or read; the message is one line for a person."""


def refuse_links(path: Path) -> None:
    if path.is_symlink():
        raise RunFileError(f"{path} is a symbolic link; lab files are never written or read through one")


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, then
    os.replace, so a reader sees the old file or the new one, never half of one."""
    path = Path(path)
    refuse_links(path.parent)
    refuse_links(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a saved run is an ordinary file
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
