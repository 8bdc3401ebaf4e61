"""Saving and loading a lab run: the weights as safetensors, the rest as JSON.

A run folder holds ``model.safetensors`` and ``run.json`` (model shape, training
settings, curves, entropies, head scores, any analysis, and the weights' SHA-256).
No pickle anywhere.

Saved as one unit: both files are written (and flushed to disk) into a new hidden
folder beside the target, which then takes the target's place in one rename (an
atomic exchange where the system has one), so a save that is killed, or two
processes saving to one folder, never leave the weights of one run beside the
JSON of another; the old run stays whole until the new one is. Temporary folders
that a killed save left behind are removed by the next save.

Loaded with suspicion: run.json is checked against its schema, the declared model
against the memory budget, and the safetensors header against the shapes the JSON
declares, all before any tensor is read; the weights' checksum must match.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save as save_tensors

from mha_explorer.core.lab import run_schema
from mha_explorer.core.lab.files import OpenFile, RunFileError, read_regular, refuse_links, write_atomic
from mha_explorer.core.lab.folders import TEMP_SUFFIX, random_part, run_foreign_entry
from mha_explorer.core.lab.model import LabModel, LabModelSpec
from mha_explorer.core.lab.run_schema import FORMAT, META_FILE, META_LIMIT, RunSchemaError
from mha_explorer.core.lab.train import LabRun, TrainSettings
from mha_explorer.core.lab.weights_file import WEIGHTS_FILE, check_budget, check_header

__all__ = ["META_FILE", "WEIGHTS_FILE", "RunFileError", "load_meta", "load_run", "save_run", "write_atomic"]

WEIGHTS_LIMIT = 8 << 30  # bytes; the memory budget usually refuses far smaller models first


# saving -----------------------------------------------------------------------
def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where the
    system cannot."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_cwd, exchange = -100, 2
    if fn(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def replace_folder(new: Path, target: Path, suffix: str = TEMP_SUFFIX) -> Path | None:
    """Put folder ``new`` at ``target``; returns where the old folder went (to remove)."""
    try:
        os.rename(new, target)  # no folder there yet: atomic
        return None
    except OSError as exc:
        if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
            raise
    if _exchange(new, target):
        return new  # the old run now sits where the new one was written
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent))
    os.rmdir(old)
    os.rename(target, old)
    try:
        os.rename(new, target)
    except OSError:
        os.rename(old, target)  # put the old run back
        raise
    return old


def _check_target(folder: Path) -> None:
    refuse_links(folder.parent)
    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise RunFileError(f"{folder} is a symbolic link; lab files are never written or read through one")
    if not stat.S_ISDIR(mode):
        raise RunFileError(f"{folder} is not a folder")
    other = run_foreign_entry(folder)  # hidden ones too: the old folder is removed once replaced
    if other is not None:
        raise RunFileError(f"{folder} holds other files ({other[:40]}); a lab run is saved into a "
                           "folder of its own")


def remove_stale(folder: Path, suffix: str = TEMP_SUFFIX,
                 ours: Callable[[Path], bool] = lambda temp: run_foreign_entry(temp) is None) -> None:
    """Temporary folders of killed saves of ``folder``: named exactly as a save names them
    (mkdtemp's eight random characters between the name and ``suffix``), holding only what
    a save writes (``ours``), and held locked by no live save. Anything else with a
    similar name (a person's ``.heads-1.notes.tmp``) is not this app's and stays."""
    name = re.compile(random_part(folder.name) + re.escape(suffix))
    for temp in folder.parent.glob(f".{glob.escape(folder.name)}.*{suffix}"):
        with contextlib.suppress(OSError):
            if not name.fullmatch(temp.name) or not stat.S_ISDIR(os.lstat(temp).st_mode) or not ours(temp):
                continue
            fd = os.open(temp, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a live save holds its lock
                shutil.rmtree(temp)
            finally:
                os.close(fd)


def run_meta(run: LabRun, extra: dict | None, weights_sha256: str) -> dict:
    return {
        "format": FORMAT,
        "spec": run.spec.to_dict(),
        "settings": run.settings.to_dict(),
        "curve": [list(p) for p in run.curve],
        "entropy": [[step, bits] for step, bits in run.entropy],
        "scores": [[step, prefix, previous] for step, prefix, previous in run.scores],
        "seconds": run.seconds,
        "device": run.device,
        "weights_sha256": weights_sha256,
        "extra": extra or {},
    }


def save_run(run: LabRun, folder: str | os.PathLike, extra: dict | None = None) -> Path:
    """Write ``run`` (and ``extra``, e.g. ablation results) as the folder ``folder``,
    replacing a run saved there before as one unit (see the module's notes)."""
    folder = Path(folder)
    _check_target(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().to("cpu").contiguous() for k, v in run.model.state_dict().items()}
    weights = save_tensors(tensors)
    meta = run_meta(run, extra, hashlib.sha256(weights).hexdigest())
    # one save at a time in this parent folder, across processes: two saves of one run moving
    # folders aside at once (where no one-step swap exists) or sweeping up each other's fresh
    # temporary folders as stale would lose a run
    with parent_locked(folder.parent):
        _save_locked(folder, weights, meta)
    return folder


_HELD = threading.local()  # how deep this thread is in saves holding their parent's lock


@contextlib.contextmanager
def parent_locked(parent: Path):
    """An exclusive lock on the parent folder, shared by every process saving into it; a save
    started inside another on the same thread (a callback) already holds it."""
    if getattr(_HELD, "depth", 0):
        _HELD.depth += 1
        try:
            yield
        finally:
            _HELD.depth -= 1
        return
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _HELD.depth = 1
        try:
            yield
        finally:
            _HELD.depth = 0
    finally:
        os.close(fd)


def _save_locked(folder: Path, weights: bytes, meta: dict) -> None:
    """The save itself, with the parent folder locked (see save_run)."""
    temp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=TEMP_SUFFIX, dir=folder.parent))
    lock = os.open(temp, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # tells other saves this folder is not stale
        os.chmod(temp, 0o755)  # mkdtemp makes it private; a saved run is an ordinary folder
        write_atomic(temp / WEIGHTS_FILE, weights)
        write_atomic(temp / META_FILE, json.dumps(meta, indent=1).encode())
        _check_target(folder)  # again: something may have been planted meanwhile
        old = replace_folder(temp, folder)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except OSError as exc:
        raise RunFileError(f"could not save the run to {folder}: {exc.strerror or exc}") from None
    finally:
        os.close(lock)
        if temp.exists() and not temp.is_symlink():
            shutil.rmtree(temp, ignore_errors=True)  # an interrupted save leaves nothing
    remove_stale(folder)


# loading ----------------------------------------------------------------------
def load_meta(folder: str | os.PathLike, check: Callable[[], None] | None = None) -> dict:
    """The JSON half of a saved run, checked against its schema (cheap: no tensors)."""
    folder = Path(folder)
    try:
        return run_schema.check(run_schema.parse(read_regular(folder / META_FILE, META_LIMIT, check)))
    except RunSchemaError as exc:
        raise RunFileError(str(exc)) from None


def _read_tensors(f: OpenFile, header: dict, check: Callable[[], None] | None) -> dict[str, torch.Tensor]:
    """The header's tensors, one at a time, from the file already opened (and checked)."""
    source = f"/proc/self/fd/{f.fd}"  # the very file checked, not whatever the path names now
    if not os.path.exists(source):
        source = str(f.path)
    tensors = {}
    try:
        with safe_open(source, framework="pt") as handle:
            for name in header:
                if check is not None:
                    check()
                tensors[name] = handle.get_tensor(name)
    except RunFileError:
        raise
    except Exception:  # noqa: BLE001 - the header was checked; anything left is damage
        raise RunFileError(f"{WEIGHTS_FILE} cannot be read: its tensors are damaged") from None
    return tensors


def load_run(folder: str | os.PathLike, device: str = "cpu", check: Callable[[], None] | None = None,
             budget: int | None = None) -> tuple[LabRun, dict]:
    """The run saved in ``folder`` (model in eval mode on ``device``) and its ``extra``.
    ``check()`` runs between pieces of work (it may raise, e.g. Cancelled)."""
    folder = Path(folder)
    refuse_links(folder)
    meta = load_meta(folder, check)
    check_budget(meta["spec"], meta["settings"], budget)
    spec = LabModelSpec(**meta["spec"])
    settings = TrainSettings(**meta["settings"])
    with OpenFile(folder / WEIGHTS_FILE, WEIGHTS_LIMIT) as f:
        header = check_header(f.read_at(0, min(8, f.size), check), lambda n: f.read_at(8, n, check),
                              f.size, meta["spec"])
        sha = meta.get("weights_sha256")
        if sha is not None and f.sha256(check) != sha:
            raise RunFileError(f"{WEIGHTS_FILE} is not the one saved with {META_FILE} (its checksum "
                               "differs): the run was changed or mixed with another")
        tensors = _read_tensors(f, header, check)
        f.unchanged()
    model = LabModel(spec)
    try:
        model.load_state_dict(tensors)
    except RuntimeError:
        raise RunFileError(f"{WEIGHTS_FILE} does not fit the model in {META_FILE}") from None
    model.to(device).eval()
    run = LabRun(spec, settings, model, device=device,
                 curve=[(int(s), float(lo), float(a)) for s, lo, a in meta["curve"]],
                 entropy=[(int(s), [float(b) for b in bits]) for s, bits in meta["entropy"]],
                 scores=[(int(s), [float(p) for p in pre], [float(q) for q in prev])
                         for s, pre, prev in meta.get("scores", [])],
                 seconds=float(meta.get("seconds", 0.0)))
    return run, meta.get("extra", {})
