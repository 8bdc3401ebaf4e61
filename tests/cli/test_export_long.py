"""export of a long sequence: the attention pictures compute only the query rows they
draw and say which (on stderr and in rows.json); a computation of every row says how long
it will take first, shows a bar on a terminal and stops at Ctrl+C with 130, leaving nothing."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import xml.etree.ElementTree as ET

import pytest
from terminal_session import assert_stopped_in_one_line, interrupt_at

from mha_explorer.cli import main
from mha_explorer.core.config import MHAConfig
from mha_explorer.core.engine import runner
from mha_explorer.core.plan import memory

SMALL = ["--d-model", "32", "--heads", "4", "--kv-heads", "2", "--seq", "40", "--batch", "1",
         "--causal", "--device", "cpu"]


def run_main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture
def long_for_the_picture(monkeypatch):
    """A sequence the picture cannot show whole (as 100,000 tokens would be), at a small size."""
    monkeypatch.setattr(memory, "FULL_DETAIL_MAX_CELLS", 64)
    monkeypatch.setattr(memory, "SHOWN_MAX_ROWS", 6)


def test_a_softmax_export_draws_exact_picked_rows_and_names_them(qapp, tmp_path, long_for_the_picture):
    out = tmp_path / "slides"
    rc, stdout, err = run_main(["export", "--stage", "softmax", "--out", str(out), "--format", "svg",
                                "--size", "1280x720", "--no-tables", *SMALL])
    assert rc == 0, err
    # both pictures say their rows are picked and exact: the maps' caption, and the stage's
    # statistics (spread and entropy of the kept scores) say which rows they are over
    for name in ("06-softmax-heads.svg", "06-softmax.svg"):
        words = " ".join(" ".join(ET.parse(out / name).getroot().itertext()).replace("\u00a0", " ").split())
        assert "spread evenly, each exact" in words, (name, words[:2000])
    assert "Over query rows 0," in words
    sidecar = json.loads((out / "rows.json").read_text())
    rows = sidecar["rows"]
    assert rows == sorted(set(rows)) and len(rows) == 6 and rows[0] == 0 and rows[-1] == 39
    assert sidecar["query_rows_total"] == 40 and sidecar["batch_element"] == 0
    assert str(out / "rows.json") in stdout.splitlines()
    assert err.count("\n") == 1 and "6 of 40" in err and "each exact" in err, err
    # the rows drawn are the engine's picked rows, each equal to the whole computation's
    # (tests/core/test_engine_picked_rows.py)
    cfg = MHAConfig(d_model=32, n_heads=4, n_kv_heads=2, seq=40, batch=1, causal=True, device="cpu")
    assert list(runner.run(cfg, mode="rows").row_ids) == rows


def test_an_export_of_every_row_removes_an_earlier_rows_sidecar(qapp, tmp_path, monkeypatch):
    out = tmp_path / "slides"
    args = ["export", "--stage", "softmax", "--out", str(out), "--format", "png", "--size", "640x360",
            "--no-tables"]
    with monkeypatch.context() as m:
        m.setattr(memory, "FULL_DETAIL_MAX_CELLS", 64)
        assert run_main([*args, *SMALL])[0] == 0
    assert (out / "rows.json").is_file()
    rc, stdout, err = run_main([*args, *SMALL])  # now small enough to draw every row
    assert rc == 0, err
    assert not (out / "rows.json").exists()  # it would describe the pictures just replaced
    assert "rows.json" not in stdout and "each exact" not in err


def test_a_stage_after_the_softmax_says_how_long_every_row_takes(qapp, tmp_path, long_for_the_picture):
    out = tmp_path / "slides"
    rc, _stdout, err = run_main(["export", "--stage", "output", "--out", str(out), "--format", "png",
                                 "--size", "640x360", "--no-tables", *SMALL])
    assert rc == 0, err
    assert "needs every one of the 40 query rows" in err and "FLOPs" in err, err
    assert not (out / "rows.json").exists()


@pytest.mark.skipif(sys.platform.startswith("win"), reason="POSIX terminals and signals")
def test_on_a_terminal_every_row_shows_a_bar_and_ctrl_c_stops_it(tmp_path):
    out = tmp_path / "slides"
    # every row of 60,000 tokens: minutes of work, so the signal lands mid-computation
    run = interrupt_at(["export", "--stage", "output", "--out", str(out), "--d-model", "64", "--heads", "4",
                        "--batch", "1", "--seq", "60000", "--causal", "--device", "cpu"],
                       b"computing:", env={"QT_QPA_PLATFORM": "offscreen"})
    assert b"needs every one of the 60,000 query rows" in run.shown  # said before the bar
    assert_stopped_in_one_line(run)
    assert not out.exists() or not any(out.iterdir())  # nothing written, not even in part
