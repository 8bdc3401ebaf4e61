"""Export: pictures of the stated size that decode and are not blank, SVGs that parse
with an <svg> root, tables whose numbers are the plan's; the window's own stage
never moves."""

from __future__ import annotations

import csv
import errno
import os
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QImage
from waits import TRACE_MS

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.specs.export import parse_formats, parse_size, parse_stages, stage_stem
from mha_explorer.core.stages.catalog import STAGE_IDS
from mha_explorer.core.system import safe_files
from mha_explorer.qt.shell.export import ExportOptions, export_stages

SIZE = (800, 450)
WAIT_MS = 60_000


def exported(qtbot, run) -> list:
    """The files of a window's export once it has ended (it runs over event-loop turns)."""
    qtbot.waitUntil(lambda: run.done, timeout=WAIT_MS)
    return run.written


def assert_picture(path, size=SIZE) -> None:
    assert path.is_file() and path.stat().st_size > 0, path
    image = QImage(str(path))
    assert not image.isNull(), path
    assert image.size() == QSize(*size), (path, image.size())
    # not a blank page: a stage picture has ink, fills and colours
    colours = {image.pixel(x, y) for x in range(0, size[0], 7) for y in range(0, size[1], 7)}
    assert len(colours) > 20, (path, len(colours))


def assert_svg(path, size=SIZE) -> None:
    root = ET.parse(path).getroot()
    assert root.tag.rsplit("}", 1)[-1] == "svg", root.tag
    assert root.get("viewBox", "").split()[2:] == [str(size[0]), str(size[1])]
    assert len(list(root.iter())) > 20, path  # drawn, not an empty document


def assert_tables_match_the_plan(folder, config: MHAConfig) -> None:
    plan = build_plan(config)
    with open(folder / "shapes.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    expected = [(s.id, t.name, t.nbytes, s.flops, s.bytes) for s in plan.stages for t in s.tensors]
    got = [(r["stage"], r["tensor"], int(r["bytes"]), int(r["stage_flops"]), int(r["stage_bytes"]))
           for r in rows]
    assert got == expected
    for r, tensor in zip(rows, [t for s in plan.stages for t in s.tensors], strict=True):
        assert r["shape"] == " × ".join(map(str, tensor.shape))
        assert r["strides"] == " × ".join(map(str, tensor.strides))
    with open(folder / "params.csv", newline="", encoding="utf-8") as f:
        params = {r["parameter"]: int(r["count"]) for r in csv.DictReader(f)}
    for term in plan.params.terms:
        assert params[term.name] == term.count
    assert params["total"] == plan.params.total
    assert params["KV cache per token (bytes)"] == plan.memory.kv_cache_per_token
    assert params["attention matrix (bytes)"] == plan.memory.attention_matrix
    assert (folder / "shapes.md").read_text(encoding="utf-8").startswith("| stage |")
    assert f"{plan.params.total:,}" in (folder / "params.md").read_text(encoding="utf-8")


def test_a_stage_exports_as_sized_pictures_and_matching_tables(qtbot, controller, tmp_path):
    cfg, trace = controller.config, controller.trace
    written = export_stages(cfg, trace, ["scores"], tmp_path, options=ExportOptions(size=SIZE))
    names = sorted(p.name for p in written)
    assert names == sorted(["05-scores.png", "05-scores.svg", "05-scores-heads.png",
                            "05-scores-heads.svg", "shapes.csv", "shapes.md", "params.csv",
                            "params.md"])
    for name in ("05-scores.png", "05-scores-heads.png"):
        assert_picture(tmp_path / name)
    for name in ("05-scores.svg", "05-scores-heads.svg"):
        assert_svg(tmp_path / name)
    assert_tables_match_the_plan(tmp_path, cfg)


def test_every_stage_exports_in_order_without_a_trace_too(qtbot, tmp_path):
    cfg = MHAConfig(d_model=32, n_heads=4, n_kv_heads=2, batch=1, seq=5, causal=True)
    written = export_stages(cfg, None, "all", tmp_path,
                            options=ExportOptions(size=(640, 360), formats=("png",), tables=False))
    assert [p.name for p in written] == [f"{stage_stem(s)}{part}.png" for s in STAGE_IDS
                                         for part in ("", "-heads")]
    for path in written[::2]:  # the stage views: shapes and arithmetic need no trace
        assert_picture(path, (640, 360))


def test_the_window_exports_its_stage_and_stays_on_it(qtbot, make_window, tmp_path):
    window = make_window()
    window.controller.set_stage("merge")
    run = window.export_current(tmp_path / "out", options=ExportOptions(size=(960, 540)))
    written = exported(qtbot, run)
    assert window.controller.stage == "merge"
    assert {p.name for p in written} >= {"08-merge.png", "08-merge.svg", "08-merge-heads.png"}
    assert_picture(tmp_path / "out" / "08-merge.png", (960, 540))
    assert_tables_match_the_plan(tmp_path / "out", window.controller.config)
    written = exported(qtbot, window.export_current(tmp_path / "all", all_stages=True,
                                                    options=ExportOptions(formats=("svg",), tables=False)))
    assert len(written) == 2 * len(STAGE_IDS) and window.controller.stage == "merge"


def test_the_window_s_export_draws_a_piece_a_turn_and_encodes_elsewhere(qtbot, make_window, tmp_path,
                                                                       monkeypatch):
    """Drawing and encoding every picture in the turn of the click froze the window (0.6 s on
    two busy cores): the export returns at once, the views draw their pages a piece per turn,
    and the jobs thread encodes the PNGs and writes the files."""
    import threading

    from mha_explorer.qt.shell import export

    encoders, real = [], export._png_of

    def encoding(image):
        encoders.append(threading.current_thread())
        return real(image)

    monkeypatch.setattr(export, "_png_of", encoding)
    window = make_window(MHAConfig(d_model=64, n_heads=8, batch=1, seq=5, device="cpu"))
    window.controller.set_stage("softmax")
    run = window.export_current(tmp_path / "out", options=ExportOptions(size=SIZE, formats=("png",)))
    assert not run.done and not (tmp_path / "out" / "06-softmax.png").exists()
    assert {p.name for p in exported(qtbot, run)} >= {"06-softmax.png", "06-softmax-heads.png", "shapes.csv"}
    assert len(encoders) == 2 and threading.main_thread() not in encoders
    assert_picture(tmp_path / "out" / "06-softmax-heads.png")
    assert window.statusBar().currentMessage().startswith("exported 6 files")


def test_cancel_stops_an_export_between_whole_files(qtbot, make_window, tmp_path):
    window = make_window()
    run = window.export_current(tmp_path / "all", all_stages=True, options=ExportOptions(size=SIZE))
    qtbot.waitUntil(lambda: len(list((tmp_path / "all").glob("*.png"))) >= 1, timeout=WAIT_MS)
    window.status_view.job_progress.cancel()  # the status bar's Cancel
    assert run.done and run.problem == "cancelled"
    assert window.statusBar().currentMessage().startswith("export cancelled")
    qtbot.waitUntil(lambda: window.controller.jobs._runner.in_flight is None, timeout=WAIT_MS)
    pictures = sorted((tmp_path / "all").glob("*.png"))
    assert 1 <= len(pictures) < 2 * len(STAGE_IDS) and part_files(tmp_path / "all") == []
    for path in pictures:
        assert_picture(path)


def test_every_head_s_map_is_in_the_exported_picture(make_controller, tmp_path):
    """The heads' page draws its maps over several turns, like the window's: the export
    draws every one before it writes (a page of eight heads once held five)."""
    from mha_explorer.qt.shell.export import StageExporter

    cfg = MHAConfig(d_model=64, n_heads=8, batch=1, seq=5)
    trace = make_controller(cfg).current_trace
    with StageExporter(cfg, trace, options=ExportOptions(size=(900, 500), formats=("png",))) as made:
        made.export_stage("softmax", tmp_path)
        cells = made._heads.view.cells
        assert len(cells) == cfg.H
        for head, cell in enumerate(cells):
            np.testing.assert_array_equal(cell.image.image, trace.tensors["softmax"]["weights"][0, head])


def test_an_unwritable_folder_is_a_message_not_an_exception(qtbot, make_window, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    window = make_window()
    assert exported(qtbot, window.export_current(blocker / "inside")) == []
    assert "export failed" in window.statusBar().currentMessage()


@pytest.mark.parametrize("text, size", [("1920x1080", (1920, 1080)), ("640×360", (640, 360)),
                                        (" 800 x 600 ", (800, 600))])
def test_sizes_parse(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "1920", "1920x", "x1080", "axb", "100x100", "9000x1080",
                                  "1920x1080x3", "-640x360"])
def test_bad_sizes_are_refused_with_a_sentence(text):
    with pytest.raises(ValueError, match="'"):
        parse_size(text)


def test_formats_and_stages_parse():
    assert parse_formats("svg, PNG,svg") == ("svg", "png")
    for bad in ("", "gif", "png,,jpg"):
        with pytest.raises(ValueError):
            parse_formats(bad)
    assert parse_stages("all") == "all" and parse_stages("merge") == ("merge",)
    assert parse_stages("rope") == ("rope",)  # a variant's stage: checked against the plan later
    with pytest.raises(ValueError):
        parse_stages("Merge")


# failures: nothing lost, nothing truncated, nothing claimed ----------------------------------
SMALL = MHAConfig(d_model=32, n_heads=4, n_kv_heads=2, batch=1, seq=5, causal=True)
SVG_ONLY = ExportOptions(size=(640, 360), formats=("svg",), tables=True)


def part_files(folder) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(safe_files.PART_SUFFIX)]


def fill_disk_after(monkeypatch, whole_files: int, folder=None) -> None:
    """The disk fills up during file number ``whole_files + 1`` (of those written into ``folder``,
    when given): half of it is written."""
    real = safe_files._write_all
    count = {"n": 0}

    def write(fd, data):
        if folder is not None and not os.readlink(f"/proc/self/fd/{fd}").startswith(str(folder)):
            return real(fd, data)  # another file (the window's preferences)
        count["n"] += 1
        if count["n"] > whole_files:
            real(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd, data)

    monkeypatch.setattr(safe_files, "_write_all", write)


def test_a_full_disk_fails_loudly_and_keeps_the_earlier_export(qtbot, tmp_path, monkeypatch):
    first = export_stages(SMALL, None, "all", tmp_path, options=SVG_ONLY)
    before = {p.name: p.read_bytes() for p in first}
    stale = tmp_path / "07-weighted_sum.svg"
    stale.write_bytes(b"<svg>an older picture</svg>")  # an earlier export differs from this one
    before[stale.name] = stale.read_bytes()
    fill_disk_after(monkeypatch, whole_files=3)
    with pytest.raises(OSError) as caught:
        export_stages(SMALL, None, "all", tmp_path, options=SVG_ONLY)
    assert caught.value.errno == errno.ENOSPC and "No space left" in caught.value.strerror
    assert "02-project-heads.svg" in caught.value.strerror  # the fourth: 01, 01-heads, 02, 02-heads
    assert part_files(tmp_path) == []
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert after == before  # the first three were rewritten identically, the rest untouched
    for name in after:
        if name.endswith(".svg") and name != stale.name:
            assert_svg(tmp_path / name, (640, 360))


def test_a_planted_link_is_never_followed(qtbot, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("not a picture\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "01-input.png").symlink_to("../victim.txt")
    with pytest.raises(OSError, match="symbolic link") as caught:
        export_stages(SMALL, None, ["input"], out, options=ExportOptions(size=(640, 360)))
    assert str(out / "01-input.png") in caught.value.strerror
    assert victim.read_text() == "not a picture\n" and (out / "01-input.png").is_symlink()


@pytest.mark.parametrize("folder", ["", "   "])
def test_an_empty_folder_name_is_refused(qtbot, tmp_path, monkeypatch, folder):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="folder"):
        export_stages(SMALL, None, ["input"], folder, options=SVG_ONLY)
    assert list(tmp_path.iterdir()) == []  # nothing landed in the current directory


def test_the_window_reports_a_failed_export_with_the_reason(qtbot, make_window, tmp_path,
                                                            monkeypatch):
    window = make_window()
    fill_disk_after(monkeypatch, whole_files=1, folder=tmp_path / "out")
    written = exported(qtbot, window.export_current(tmp_path / "out", options=SVG_ONLY))
    assert written == sorted((tmp_path / "out").glob("*.svg"))  # the file written whole before it
    message = window.statusBar().currentMessage()
    assert message.startswith("export failed") and "No space left on device" in message
    assert "exported" not in message
    assert part_files(tmp_path / "out") == []


@pytest.mark.parametrize("text", ["", "  "])
def test_the_dialog_refuses_an_empty_folder_and_stays_open(qtbot, tmp_path, text):
    from mha_explorer.qt.shell.export_dialog import ExportDialog

    dialog = ExportDialog(tmp_path)
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.folder_edit.setText(text)
    dialog.buttons.accepted.emit()
    assert dialog.isVisible() and dialog.result() != ExportDialog.DialogCode.Accepted
    assert not dialog.folder_error.isHidden() and "folder" in dialog.folder_error.text()
    dialog.folder_edit.setText(str(tmp_path / "slides"))
    dialog.buttons.accepted.emit()
    assert dialog.result() == ExportDialog.DialogCode.Accepted


def test_the_window_exports_the_head_and_batch_element_it_shows(qtbot, make_window, tmp_path):
    window = make_window()
    c = window.controller
    c.set_stage("softmax")
    c.set_head(2)
    c.set_batch_index(1)
    qtbot.waitUntil(lambda: c.current_trace is not None, timeout=TRACE_MS)
    assert "head 2 of 4" in window.stage_view.diagram.label_texts()
    options = ExportOptions(size=(640, 360), formats=("png", "svg"), tables=False)
    exported(qtbot, window.export_current(tmp_path / "window", options=options))
    picture = (tmp_path / "window" / "06-softmax.png").read_bytes()

    def drawn(head: int) -> bytes:
        folder = tmp_path / f"head{head}"
        export_stages(c.config, c.current_trace, ["softmax"], folder, batch_index=1, head=head,
                      options=options)
        return (folder / "06-softmax.png").read_bytes()

    assert picture == drawn(2) and picture != drawn(0)
    heads_svg = (tmp_path / "window" / "06-softmax-heads.svg").read_text()
    note = f"batch element {c.batch_index} of {c.config.batch}"  # as the window's caption says
    assert note in window.heatmaps.caption.text()
    assert note in heads_svg.replace("\u00a0", " ")
