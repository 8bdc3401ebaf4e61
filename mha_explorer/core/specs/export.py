"""What an export is asked for, checked without Qt: picture size, formats, file names.

The command line checks its flags with these before Qt or torch load (a typo
costs nothing); the Qt exporter uses the same names for the files it writes.
"""

from __future__ import annotations

import os
from pathlib import Path

from mha_explorer.core.stages.catalog import CLASSIC, STAGES
from mha_explorer.core.system.typed_input import whole_number

FORMATS = ("png", "svg")
DEFAULT_SIZE = (1920, 1080)
MIN_SIDE, MAX_SIDE = 320, 8192  # smaller cannot hold the diagram; larger is a memory hazard


def parse_size(text: str) -> tuple[int, int]:
    """'1920x1080' -> (1920, 1080); ValueError with a sentence for anything else."""
    parts = str(text).lower().replace("×", "x").split("x")
    try:
        w, h = (whole_number(p) for p in parts)
    except ValueError:  # not two parts, or a part that is not ASCII digits
        raise ValueError(f"'{text}' is not WIDTHxHEIGHT, e.g. 1920x1080") from None
    if not (MIN_SIDE <= w <= MAX_SIDE and MIN_SIDE <= h <= MAX_SIDE):
        raise ValueError(f"'{text}': each side must be {MIN_SIDE} to {MAX_SIDE} pixels")
    return w, h


def parse_formats(text: str) -> tuple[str, ...]:
    """'png,svg' -> ('png', 'svg'); ValueError for an unknown or empty list."""
    chosen = [f.strip().lower() for f in str(text).split(",") if f.strip()]
    if not chosen or any(f not in FORMATS for f in chosen):
        raise ValueError(f"'{text}': choose {', '.join(FORMATS)} or both, comma-separated")
    return tuple(dict.fromkeys(chosen))  # in the order given, once each


def parse_stages(text: str) -> str | tuple[str, ...]:
    """'all' (every stage the config has, variants' included) or one stage id as a tuple;
    ValueError otherwise. Whether the config has that stage is checked with its plan."""
    if text == "all":
        return "all"
    if text in STAGES:
        return (text,)
    raise ValueError(f"'{text}' is not 'all' or a stage ({', '.join(STAGES)})")


def stage_stem(stage: str, stage_ids: tuple[str, ...] = CLASSIC) -> str:
    """'scores' -> '05-scores': numbered in the config's own list of stages (``stage_ids``, the
    nine of plain attention by default), so the files sort as the stages run."""
    return f"{tuple(stage_ids).index(stage) + 1:02d}-{stage}"


def check_folder(folder: str | os.PathLike) -> Path:
    """The export folder as a Path. ValueError for an empty or blank name (which
    would quietly mean the current directory); NotADirectoryError when something
    other than a folder has that name."""
    text = os.fspath(folder)
    if not str(text).strip():
        raise ValueError("no export folder given; choose a folder")
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(20, f"{path} is not a folder", str(path))
    return path
