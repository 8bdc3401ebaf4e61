"""``mha-explorer export`` in a real process with no display: every stage as pictures
of the stated size, SVGs with an <svg> root, and tables whose numbers are the
plan's. Bad flags are one line on stderr and exit 2, before torch or Qt load."""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QImage

from mha_explorer.cli import main
from mha_explorer.core.config import MHAConfig
from mha_explorer.core.specs.export import stage_stem
from mha_explorer.core.stages.catalog import STAGE_IDS
from mha_explorer.core.plan.build import build_plan

SMALL = ["--d-model", "32", "--heads", "4", "--kv-heads", "2", "--seq", "5", "--batch", "1",
         "--causal", "--device", "cpu"]
SMALL_CONFIG = MHAConfig(d_model=32, n_heads=4, n_kv_heads=2, seq=5, batch=1, causal=True,
                         device="cpu")


def run_main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def assert_one_line_error(rc: int, out: str, err: str) -> str:
    assert rc == 2 and out == "", (rc, out, err)
    assert err.startswith("mha-explorer: error: ") and err.count("\n") == 1, err
    return err


def headless_env() -> dict[str, str]:
    """The environment of a CI runner: no display and no platform chosen, so the
    command has to find the offscreen platform by itself."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    if not sys.platform.startswith("linux"):
        env["QT_QPA_PLATFORM"] = "offscreen"  # elsewhere there is always a screen to avoid
    return env


def test_export_all_stages_headless(qapp, tmp_path):
    out = tmp_path / "slides"
    result = subprocess.run(
        [sys.executable, "-m", "mha_explorer", "export", "--stage", "all", "--out", str(out),
         "--size", "640x360", *SMALL],
        env=headless_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    listed = result.stdout.split()
    pictures = [f"{stage_stem(s)}{part}.{fmt}" for s in STAGE_IDS for part in ("", "-heads")
                for fmt in ("png", "svg")]
    tables = ["shapes.csv", "shapes.md", "params.csv", "params.md"]
    assert sorted(os.path.basename(p) for p in listed) == sorted(pictures + tables)
    for name in pictures:
        path = out / name
        assert path.is_file() and path.stat().st_size > 0, name
        if name.endswith(".png"):
            image = QImage(str(path))
            assert not image.isNull() and image.size() == QSize(640, 360), name
        else:
            assert ET.parse(path).getroot().tag.rsplit("}", 1)[-1] == "svg", name

    plan = build_plan(SMALL_CONFIG)
    with open(out / "shapes.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [(r["stage"], r["tensor"], int(r["bytes"]), int(r["stage_flops"])) for r in rows] == \
        [(s.id, t.name, t.nbytes, s.flops) for s in plan.stages for t in s.tensors]
    with open(out / "params.csv", newline="", encoding="utf-8") as f:
        params = {r["parameter"]: int(r["count"]) for r in csv.DictReader(f)}
    assert params["total"] == plan.params.total
    assert params["full MHA (Hkv = H)"] == plan.params.mha_total


def test_one_stage_one_format(tmp_path):
    out = tmp_path / "one"
    result = subprocess.run(
        [sys.executable, "-m", "mha_explorer", "export", "--stage", "softmax", "--out", str(out),
         "--format", "svg", "--no-tables", "--theme", "dark", "--size", "1280x720", *SMALL],
        env=headless_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["06-softmax-heads.svg", "06-softmax.svg"]


@pytest.mark.parametrize("flags", [
    ["--size", "1920"], ["--size", "10x10"], ["--size", "wide"], ["--format", "gif"],
    ["--format", ""], ["--stage", "attention"], ["--stage", "ALL"], ["--heads", "3"],
    ["--theme", "sepia"], ["--d-model", "0"],
])
def test_bad_flags_are_one_line_and_exit_2(tmp_path, flags):
    rc, out, err = run_main(["export", "--out", str(tmp_path / "x"), *flags])
    assert_one_line_error(rc, out, err)
    assert not (tmp_path / "x").exists()  # nothing written, nothing computed


def test_out_is_required_and_must_be_a_folder(tmp_path):
    assert_one_line_error(*run_main(["export"]))
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    message = assert_one_line_error(*run_main(["export", "--out", str(a_file)]))
    assert "--out" in message


def test_export_is_documented_in_help(capsys):
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    text = capsys.readouterr().out
    for flag in ("--stage", "--out", "--size", "--format", "--theme", "--no-tables"):
        assert flag in text


# I/O failures: exit 1 with the system's reason; 2 stays the usage code ----------------------
def test_a_planted_link_stops_the_export_with_exit_1_and_its_name(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "x"
    out.mkdir()
    (out / "01-input.svg").symlink_to("../victim.txt")
    result = subprocess.run(
        [sys.executable, "-m", "mha_explorer", "export", "--out", str(out), "--preset", "gpt2",
         "--seq", "8", "--format", "svg", "--no-tables", "--device", "cpu"],
        env=headless_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert str(out / "01-input.svg") in result.stderr and "symbolic link" in result.stderr
    assert result.stdout == ""  # no file is claimed as written
    assert victim.read_text() == "precious\n" and (out / "01-input.svg").is_symlink()


def test_a_full_disk_exits_1_with_the_reason_and_no_part_files(qapp, tmp_path, monkeypatch):
    from mha_explorer.core.system import safe_files

    real = safe_files._write_all
    written = []

    def write(fd, data):  # the fifth file finds the disk full halfway
        if len(written) == 4:
            real(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(fd)
        real(fd, data)

    monkeypatch.setattr(safe_files, "_write_all", write)
    out = tmp_path / "full"
    rc, stdout, err = run_main(["export", "--out", str(out), "--format", "svg", "--size", "640x360",
                                *SMALL])
    assert rc == 1 and stdout == "", (rc, err)
    assert err.startswith("mha-explorer: error: ") and err.count("\n") == 1, err
    assert "No space left on device" in err and "[Errno" not in err
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(["01-input.svg", "01-input-heads.svg", "02-project.svg",
                            "02-project-heads.svg"])  # four whole files, nothing half-written
    for name in names:
        assert ET.parse(out / name).getroot().tag.rsplit("}", 1)[-1] == "svg", name


def test_shapes_into_a_full_stdout_is_one_line_and_exit_1(monkeypatch, capsys):
    class FullDisk(io.StringIO):
        def flush(self):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(sys, "stdout", FullDisk())
    monkeypatch.setattr("mha_explorer.console._abandon_stdout", lambda: None)  # no real fd 1 here
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(["shapes"])
    assert rc == 1
    assert err.getvalue() == ("mha-explorer: error: could not write to standard output: "
                              "No space left on device\n")


def test_shapes_into_a_closed_stdout_is_one_line_and_exit_1():
    result = subprocess.run(
        [sys.executable, "-c", "import os, sys; os.close(1); from mha_explorer.cli import main; "
         "sys.exit(main(['shapes']))"], capture_output=False, stderr=subprocess.PIPE,
        stdout=None, text=True, timeout=120, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("mha-explorer: error: ") and result.stderr.count("\n") == 1, \
        result.stderr


@pytest.fixture
def tiny_disk(tmp_path):
    """A 200 KiB tmpfs in tmp_path where this machine lets us mount one; skipped
    elsewhere (the patched-writer test above covers the same path everywhere)."""
    mount_point = tmp_path / "full"
    mount_point.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(mount_point)],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], capture_output=True, timeout=30)


def test_a_really_full_disk_exits_1_and_keeps_only_whole_files(tiny_disk):
    result = subprocess.run(
        [sys.executable, "-m", "mha_explorer", "export", "--out", str(tiny_disk), "--preset", "gpt2",
         "--seq", "8", "--format", "svg", "--no-tables", "--device", "cpu"],
        env=headless_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1 and "No space left on device" in result.stderr
    assert result.stdout == ""
    names = sorted(p.name for p in tiny_disk.iterdir())
    assert names and len(names) < 2 * 9  # it ran out part way
    for name in names:
        assert not name.startswith("."), name  # no part file left
        assert ET.parse(tiny_disk / name).getroot().tag.rsplit("}", 1)[-1] == "svg", name
