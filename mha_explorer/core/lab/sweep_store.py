"""Saving a sweep (``lab --out DIR``) as one unit: the old sweep whole, or the new one.

The whole new sweep (a run folder per head count and summary.json) is written into a
hidden folder beside DIR, which then takes DIR's place in one rename (an atomic
exchange where the system has one), so Ctrl+C or a kill during the saves never leaves
a new heads-1 beside an old heads-2 and an old summary that describes runs no longer
on disk. What a killed save left is removed by the next save of DIR (folders.py says
which folders are the app's own). When the save fails after training, ``keep_unsaved``
saves the runs in the user's data folder instead, so the training is not lost.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from mha_explorer.core.lab.files import RunFileError, write_atomic
from mha_explorer.core.lab.folders import (
    SUMMARY_FILE,
    SWEEP_SUFFIX,
    check_sweep_target,
    run_folder_name,
    shown,
    sweep_foreign_entry,
    unsaved_folder,
)
from mha_explorer.core.lab.store import parent_locked, remove_stale, replace_folder, save_run
from mha_explorer.core.lab.train import LabRun
from mha_explorer.core.system.interrupts import deferred_interrupt

__all__ = ["keep_unsaved", "save_sweep"]


def save_sweep(out: Path, runs: Sequence[tuple[LabRun, dict]], summary: bytes) -> Path:
    """Write ``runs`` (each with its ``extra``) and ``summary`` as the folder ``out``,
    replacing a sweep saved there before as one unit; RunFileError (one line) on failure,
    with ``out`` as it was."""
    out = Path(out)
    check_sweep_target(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with parent_locked(out.parent):
            _save_locked(out, runs, summary)
    except OSError as exc:
        raise RunFileError(f"could not save the runs to {shown(out)}: {exc.strerror or exc}") from None
    remove_stale(out, SWEEP_SUFFIX, ours=lambda temp: sweep_foreign_entry(temp) is None)
    return out


def _save_locked(out: Path, runs: Sequence[tuple[LabRun, dict]], summary: bytes) -> None:
    temp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=SWEEP_SUFFIX, dir=out.parent))
    lock = os.open(temp, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # tells other saves this folder is not stale
        os.chmod(temp, 0o755)  # mkdtemp makes it private; a saved sweep is an ordinary folder
        for run, extra in runs:
            save_run(run, temp / run_folder_name(run.spec.heads), extra)
        write_atomic(temp / SUMMARY_FILE, summary)
        with deferred_interrupt():  # Ctrl+C now waits for the swap: old or new, whole
            check_sweep_target(out)  # again: something may have been planted meanwhile
            old = replace_folder(temp, out, SWEEP_SUFFIX)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)  # the old sweep, checked to be nothing else
    finally:
        os.close(lock)
        if temp.is_dir() and not temp.is_symlink():
            shutil.rmtree(temp, ignore_errors=True)  # an interrupted save leaves nothing


def keep_unsaved(task: str, runs: Sequence[tuple[LabRun, dict]], summary: bytes) -> Path:
    """Save a sweep whose own save failed in a new folder of the user's data folder;
    returns it (RunFileError when that fails too)."""
    return save_sweep(unsaved_folder(task), runs, summary)
