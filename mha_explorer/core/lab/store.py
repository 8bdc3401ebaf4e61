"""Saving and loading a lab run: the weights as safetensors, the rest as JSON.

A run folder holds ``model.safetensors`` and ``run.json`` (model shape, training
settings, curves, entropies and any analysis). No pickle anywhere. Files are
written atomically (a temporary file in the same folder, then os.replace) and
never through a symbolic link; a link in place of the folder or a file is refused.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors

from mha_explorer.core.lab.files import RunFileError, refuse_links, write_atomic
from mha_explorer.core.lab.model import LabModel, LabModelSpec
from mha_explorer.core.lab.train import LabRun, TrainSettings

WEIGHTS_FILE = "model.safetensors"
META_FILE = "run.json"
FORMAT = "mha-explorer-lab-run/1"


def _read(path: Path) -> bytes:
    refuse_links(path.parent)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise RunFileError(f"{path} is missing; is this a saved lab run?") from None
    except OSError as exc:
        raise RunFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as f:
        return f.read()


def save_run(run: LabRun, folder: str | os.PathLike, extra: dict | None = None) -> Path:
    """Write ``run`` (and ``extra``, e.g. ablation results) into ``folder``, made if missing."""
    folder = Path(folder)
    refuse_links(folder)
    if folder.exists() and not folder.is_dir():
        raise RunFileError(f"{folder} is not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().to("cpu").contiguous() for k, v in run.model.state_dict().items()}
    meta = {
        "format": FORMAT,
        "spec": run.spec.to_dict(),
        "settings": run.settings.to_dict(),
        "curve": [list(p) for p in run.curve],
        "entropy": [[step, bits] for step, bits in run.entropy],
        "seconds": run.seconds,
        "device": run.device,
        "extra": extra or {},
    }
    write_atomic(folder / WEIGHTS_FILE, save_tensors(tensors))
    write_atomic(folder / META_FILE, json.dumps(meta, indent=1).encode())
    return folder


def load_meta(folder: str | os.PathLike) -> dict:
    """The JSON half of a saved run (cheap: no tensors)."""
    path = Path(folder) / META_FILE
    try:
        meta = json.loads(_read(path))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunFileError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise RunFileError(f"{path} is not a saved lab run")
    return meta


def load_run(folder: str | os.PathLike, device: str = "cpu") -> tuple[LabRun, dict]:
    """The run saved in ``folder`` (model in eval mode on ``device``) and its ``extra``."""
    folder = Path(folder)
    meta = load_meta(folder)
    try:
        spec = LabModelSpec(**meta["spec"])
        settings = TrainSettings(**meta["settings"])
    except (TypeError, ValueError) as exc:
        raise RunFileError(f"{folder / META_FILE} describes no valid model: {exc}") from None
    try:
        tensors = load_tensors(_read(folder / WEIGHTS_FILE))
    except RunFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged file becomes one message
        raise RunFileError(f"{folder / WEIGHTS_FILE} cannot be read: {exc}") from None
    model = LabModel(spec)
    try:
        model.load_state_dict(tensors)
    except RuntimeError as exc:
        raise RunFileError(f"{folder / WEIGHTS_FILE} does not fit the model in {META_FILE}: "
                           f"{str(exc).splitlines()[0]}") from None
    model.to(device).eval()
    run = LabRun(spec, settings, model, device=device,
                 curve=[(int(s), float(lo), float(a)) for s, lo, a in meta["curve"]],
                 entropy=[(int(s), [float(b) for b in bits]) for s, bits in meta["entropy"]],
                 seconds=float(meta.get("seconds", 0.0)))
    return run, meta.get("extra", {})


def run_tensors(run: LabRun) -> dict[str, torch.Tensor]:
    """The state dict on the CPU (what ``save_run`` writes)."""
    return {k: v.detach().to("cpu") for k, v in run.model.state_dict().items()}
