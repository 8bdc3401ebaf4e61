"""A model's files found through the install records of the packages that ship them (no torch).

The packages are never imported (a package's ``__init__`` may need libraries the app does
not have); ``importlib.metadata`` says where their files are. Every failure is the model's
error in one line, with the command that fixes it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path

from mha_explorer.core.models.decoder.converted import ModelFilesError


def distribution(name: str, version: str, hint: str, missing: Callable[[str], ModelFilesError],
                 error: type[ModelFilesError] = ModelFilesError) -> importlib.metadata.Distribution:
    """The installed distribution ``name`` at ``version``; otherwise ``missing(what)`` when it is
    not installed, ``error`` (with ``hint``) when it is another version."""
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise missing(f"the package {name}=={version}") from None
    if dist.version != version:
        raise error(f"{name} {dist.version} is installed but the app reads version {version}; run: {hint}")
    return dist


def package_file(dist: importlib.metadata.Distribution, relative: str, size: int, hint: str,
                 error: type[ModelFilesError] = ModelFilesError) -> Path:
    """The file ``relative`` (to site-packages) of ``dist``, which must have ``size`` bytes."""
    path = Path(str(dist.locate_file(relative)))
    if not path.is_file():
        raise error(f"{path} is missing; reinstall: {hint}")
    actual = path.stat().st_size
    if actual != size:
        raise error(f"{path} has {actual:,} bytes, not {size:,}; reinstall: {hint}")
    return path


def missing_library(libraries: Sequence[str]) -> str | None:
    """The first of ``libraries`` that cannot be imported, or None (no import happens)."""
    return next((name for name in libraries if importlib.util.find_spec(name) is None), None)
