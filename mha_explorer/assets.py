"""The one way to reach files under resources/, shipped as mha_explorer.resources.

Always through importlib.resources, so it works from an installed wheel and
never depends on the current working directory.
"""

from __future__ import annotations

from importlib import resources
from importlib.abc import Traversable


def resource(name: str) -> Traversable:
    path = resources.files("mha_explorer.resources").joinpath(name)
    if not path.is_file():
        raise FileNotFoundError(f"resource '{name}' is not installed with mha_explorer")
    return path


def read_text(name: str) -> str:
    return resource(name).read_text(encoding="utf-8")


def read_bytes(name: str) -> bytes:
    return resource(name).read_bytes()
