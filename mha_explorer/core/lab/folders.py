"""What the lab's folders hold, recognised without torch: a run folder is its two files;
a sweep's folder (``lab --out DIR``) is one run folder per head count, ``heads-N``, and
``summary.json``. A save replaces a folder whole and removes the old one, so it only
ever replaces a folder holding nothing else, and removes a temporary folder of a killed
save only when it is named exactly as a save names it and holds only what a save writes:
a person's own file, hidden or not (``.heads-1.notes.tmp/``), is never this app's to
remove. Paths in messages are shown as one printable line.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import time
from pathlib import Path

from mha_explorer.core.lab.files import RunFileError
from mha_explorer.core.lab.run_schema import META_FILE
from mha_explorer.core.lab.weights_file import WEIGHTS_FILE
from mha_explorer.core.system.safe_files import PART_SUFFIX

RUN_FILES = frozenset({META_FILE, WEIGHTS_FILE})
SUMMARY_FILE = "summary.json"
TEMP_SUFFIX = ".tmp"  # a run folder being written, or an old one set aside
SWEEP_SUFFIX = ".sweep.tmp"  # the same for a sweep's folder
UNSAVED_FOLDER = "unsaved-lab-runs"  # in the user's data folder: runs whose save failed
_RUN_FOLDER = re.compile(r"heads-[0-9]{1,6}")


def run_folder_name(heads: int) -> str:
    return f"heads-{heads}"


def random_part(name: str) -> str:
    """The pattern of ``name`` followed by tempfile's eight random characters."""
    return re.escape(f".{name}.") + "[a-z0-9_]{8}"


def _parts_of(names) -> re.Pattern:
    """safe_files' temporary files of ``names`` (a killed write leaves one)."""
    return re.compile("|".join(random_part(n) + re.escape(PART_SUFFIX) for n in sorted(names)))


_RUN_PARTS = _parts_of(RUN_FILES)
_SUMMARY_PART = _parts_of({SUMMARY_FILE})
_RUN_TEMP = re.compile(r"\.heads-[0-9]{1,6}\.[a-z0-9_]{8}" + re.escape(TEMP_SUFFIX))


def run_foreign_entry(folder: Path) -> str | None:
    """The name of something in run folder ``folder`` that a save does not write, or None."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if not ((entry.name in RUN_FILES or _RUN_PARTS.fullmatch(entry.name))
                    and entry.is_file(follow_symlinks=False)):
                return entry.name
    return None


def sweep_foreign_entry(out: Path) -> str | None:
    """The first thing in sweep folder ``out`` a sweep does not write (as a path inside it),
    or None. A save of an older version left its run temporaries inside: those are its own."""
    with os.scandir(out) as entries:
        for entry in entries:
            if entry.name == SUMMARY_FILE or _SUMMARY_PART.fullmatch(entry.name):
                if entry.is_file(follow_symlinks=False):
                    continue
            elif ((_RUN_FOLDER.fullmatch(entry.name) or _RUN_TEMP.fullmatch(entry.name))
                  and entry.is_dir(follow_symlinks=False)):
                inner = run_foreign_entry(Path(entry.path))
                if inner is None:
                    continue
                return f"{entry.name}/{inner}"
            return entry.name
    return None


def shown(path: Path | str) -> str:
    """A path as one printable line (a control character or a byte that is not UTF-8
    written as its escape)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(path))


def check_sweep_target(out: Path) -> None:
    """RunFileError unless ``out`` is missing, or a folder (not a link) holding only a sweep."""
    try:
        if Path(out.parent).is_symlink():
            raise RunFileError(f"{shown(out.parent)} is a symbolic link; lab files are never written "
                               "through one")
        mode = os.lstat(out).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise RunFileError(f"{shown(out)} cannot be examined: {exc.strerror or exc}") from None
    if stat.S_ISLNK(mode):
        raise RunFileError(f"{shown(out)} is a symbolic link; lab files are never written through one")
    if not stat.S_ISDIR(mode):
        raise RunFileError(f"{shown(out)} is not a folder")
    try:
        other = sweep_foreign_entry(out)
    except OSError as exc:
        raise RunFileError(f"{shown(out)} cannot be read: {exc.strerror or exc}") from None
    if other is not None:
        raise RunFileError(f"{shown(out)} holds {shown(other)[:60]}, which a lab sweep does not write; "
                           "a sweep replaces its folder whole, so it is saved into a new folder or one "
                           "a sweep made")


def data_folder() -> Path:
    """The user's data folder for this app ($XDG_DATA_HOME/mha-explorer, else
    ~/.local/share/mha-explorer; %APPDATA% on Windows)."""
    if sys.platform.startswith("win") and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"]) / "MHA Explorer"
    xdg = os.environ.get("XDG_DATA_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "share") / "mha-explorer"


def unsaved_folder(task: str) -> Path:
    """A new folder name for the runs of a sweep whose own save failed."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return data_folder() / UNSAVED_FOLDER / f"{task}-{stamp}-{os.getpid()}"
