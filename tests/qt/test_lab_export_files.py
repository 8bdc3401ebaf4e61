"""The lab's export writes whole files or none: a link planted where a temporary file
used to be, or a pipe there, changes nothing and blocks nothing; a link in place of
a picture is refused; on a full disk the earlier picture stays whole and the failure
is reported. Disk limits and pipes run in a child process with a deadline."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pyqtgraph as pg
import pytest

from mha_explorer.qt.lab.export import export_all

DEADLINE_S = 120
EXPORT = '''
import os, resource, signal, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtWidgets import QApplication
import pyqtgraph as pg
from mha_explorer.qt.lab.export import export_all

if __name__ == "__main__":
    app = QApplication([])
    plot = pg.PlotWidget()
    plot.resize(900, 600)
    plot.plot([0, 1, 2, 3], [3, 1, 2, 0], pen=pg.mkPen("#0072B2", width=3))
    for i in range(200):  # enough drawing that the SVG is a good size
        plot.plot([0, 3], [i / 70, 3 - i / 70])
    limit = int(sys.argv[2])
    if limit:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        export_all(sys.argv[1], {}, {"loss": plot})
    except (OSError, ValueError) as exc:
        print("refused:", exc)
    else:
        print("written")
'''


def _export_in_child(tmp_path, folder, limit: int = 0) -> str:
    script = tmp_path / "export.py"
    script.write_text(EXPORT)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    try:
        done = subprocess.run([sys.executable, str(script), str(folder), str(limit)], capture_output=True,
                              text=True, timeout=DEADLINE_S, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("the export blocked")
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout.strip()


def _plot(qtbot):
    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    plot.resize(400, 300)
    plot.plot([0, 1, 2], [2, 0, 1])
    return plot


def test_a_link_planted_at_the_old_temporary_name_is_left_alone(qtbot, tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (folder / ".lab-loss.tmp.svg").symlink_to(victim)
    (folder / ".lab-loss.tmp.png").symlink_to(victim)
    written = export_all(folder, {}, {"loss": _plot(qtbot)})
    assert victim.read_text() == "precious"
    svg = folder / "lab-loss.svg"
    assert svg in written and not svg.is_symlink() and svg.is_file()
    assert ET.parse(svg).getroot().tag.endswith("svg")
    assert not [p for p in os.listdir(folder) if p.endswith(".part")]


def test_a_link_in_place_of_a_picture_is_refused_and_its_target_kept(qtbot, tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (folder / "lab-loss.png").symlink_to(victim)
    with pytest.raises(OSError, match="link"):
        export_all(folder, {}, {"loss": _plot(qtbot)})
    assert victim.read_text() == "precious" and (folder / "lab-loss.png").is_symlink()


def test_a_pipe_at_the_old_temporary_name_blocks_nothing(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    for ext in ("svg", "png"):
        os.mkfifo(folder / f".lab-loss.tmp.{ext}")
    assert _export_in_child(tmp_path, folder) == "written"
    assert ET.parse(folder / "lab-loss.svg").getroot().tag.endswith("svg")


def test_on_a_full_disk_the_earlier_picture_stays_whole_and_the_failure_is_said(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    assert _export_in_child(tmp_path, folder) == "written"
    before = {ext: (folder / f"lab-loss.{ext}").read_bytes() for ext in ("svg", "png")}
    # room for less than half of the new SVG: the disk is "full" part way through it
    said = _export_in_child(tmp_path, folder, limit=len(before["svg"]) // 2)
    assert said.startswith("refused:") and "lab-loss" in said
    for ext, data in before.items():
        assert (folder / f"lab-loss.{ext}").read_bytes() == data
    assert not [p for p in os.listdir(folder) if p.endswith(".part") or ".tmp." in p]
