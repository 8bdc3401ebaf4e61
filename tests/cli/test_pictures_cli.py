"""``mha-explorer pictures``: a contact sheet of the pictures a class may see, as PNGs and one
page showing them all with what the checks found; bad flags are one line and exit 2."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from mha_explorer.cli import main
from mha_explorer.core.plan.build import build_plan
from mha_explorer.qt.gallery.matrix import SETUPS

ROOT = Path(__file__).resolve().parents[2]


def test_the_sheet_holds_every_stage_of_the_chosen_setup_and_a_page_showing_them(tmp_path):
    out = tmp_path / "sheet"
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    env.pop("QT_QPA_PLATFORM", None)  # the command makes its own screens
    done = subprocess.run([sys.executable, "-m", "mha_explorer", "pictures", "--out", str(out),
                           "--setup", "mha", "--screen", "1024x768", "--mode", "presentation",
                           "--sheet-theme", "dark"], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    index = out / "index.html"
    assert done.stdout.strip() == str(index)
    stages = build_plan(SETUPS[0].make(None)).stage_ids
    pngs = sorted((out / "mha" / "1024x768-presentation-dark").glob("*.png"))
    assert [re.sub(r"^\d+-", "", p.stem) for p in pngs] == [s.replace("_", "-") for s in stages]
    image = QImage(str(pngs[0]))
    assert (image.width(), image.height()) == (1024, 768)  # the whole screen, in presentation
    page = index.read_text(encoding="utf-8")
    assert page.count("<img ") == len(stages)
    assert all(p.relative_to(out).as_posix() in page for p in pngs)
    assert f"{len(stages)} pictures" in page and "pictures:" in done.stderr


@pytest.mark.parametrize(("argv", "words"), [
    (["--setup", "GPT-5"], "unknown setup 'GPT-5'"),
    (["--screen", "800x600"], "unknown screen '800x600'"),
    (["--mode", "projector"], "invalid choice"),
])
def test_an_unknown_choice_is_one_line_and_exit_2(tmp_path, capsys, argv, words):
    assert main(["pictures", "--out", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err


def test_a_file_for_a_folder_is_one_line_and_exit_2(tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    assert main(["pictures", "--out", str(taken)]) == 2
    err = capsys.readouterr().err
    assert "is not a folder" in err and err.count("\n") == 1, err
