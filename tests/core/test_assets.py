"""Resources come with the package, wherever the program is started from."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import mha_explorer
from mha_explorer import assets

SHIPPED = ("light.qss", "dark.qss", "help.md", "mha-explorer.svg", "mha-explorer.desktop")


@pytest.mark.parametrize("name", SHIPPED)
def test_every_resource_is_found_and_not_empty(name):
    assert assets.read_bytes(name)


def test_resources_do_not_depend_on_the_working_directory(tmp_path):
    # the same copy of the package the tests import (installed or a checkout), run elsewhere
    home = str(Path(mha_explorer.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": home}
    code = "from mha_explorer import assets; print(len(assets.read_text('light.qss')))"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, check=True, env=env)
    assert int(out.stdout) == len(assets.read_text("light.qss"))


def test_a_missing_resource_is_a_clear_error():
    with pytest.raises(FileNotFoundError, match="not installed"):
        assets.resource("no-such-file.png")
