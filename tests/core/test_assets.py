"""Resources come with the package, wherever the program is started from."""

import subprocess
import sys

import pytest

from mha_explorer import assets

SHIPPED = ("light.qss", "dark.qss", "help.md", "mha-explorer.svg", "mha-explorer.desktop")


@pytest.mark.parametrize("name", SHIPPED)
def test_every_resource_is_found_and_not_empty(name):
    assert assets.read_bytes(name)


def test_resources_do_not_depend_on_the_working_directory(tmp_path):
    code = "from mha_explorer import assets; print(len(assets.read_text('light.qss')))"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, check=True)
    assert int(out.stdout) == len(assets.read_text("light.qss"))


def test_a_missing_resource_is_a_clear_error():
    with pytest.raises(FileNotFoundError, match="not installed"):
        assets.resource("no-such-file.png")
