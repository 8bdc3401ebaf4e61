"""The one way to reach files under resources/.

An installed wheel carries them as the package ``mha_explorer.resources``; a
source checkout has them in the top-level ``resources/`` folder beside the
package. Either way the path comes from the package's own location, never from
the current working directory.
"""

from __future__ import annotations

from importlib import resources
from importlib.abc import Traversable
from pathlib import Path


def _root() -> Traversable:
    try:
        return resources.files("mha_explorer.resources")
    except ModuleNotFoundError:  # a source checkout: resources/ sits beside the package
        return Path(__file__).resolve().parent.parent / "resources"


def resource(name: str) -> Traversable:
    path = _root().joinpath(name)
    if not path.is_file():
        raise FileNotFoundError(f"resource '{name}' is not installed with mha_explorer")
    return path


def read_text(name: str) -> str:
    return resource(name).read_text(encoding="utf-8")


def read_bytes(name: str) -> bytes:
    return resource(name).read_bytes()
