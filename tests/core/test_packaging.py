"""Every package folder of the source tree is listed for the wheel, so an installed
app never misses a module that a source checkout has."""

from pathlib import Path

import pytest

import mha_explorer

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(mha_explorer.__file__).resolve().parent


def test_every_package_folder_is_listed_in_pyproject():
    pyproject = ROOT.parent / "pyproject.toml"
    if not pyproject.is_file():  # an installed copy: the wheel itself is the evidence
        return
    listed = set(tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(("mha_explorer", *init.parent.relative_to(ROOT).parts))
             for init in ROOT.rglob("__init__.py")}
    missing = sorted(found - listed)
    assert not missing, f"add these packages to [tool.setuptools] packages: {missing}"
