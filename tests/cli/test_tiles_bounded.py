"""tiles at small blocks: the comparison with the full computation is bounded by the tiles
it walks (a note says why it was skipped), the counting shows a bar on a terminal and stops
at Ctrl+C with 130 and one line."""

from __future__ import annotations

import contextlib
import io
import json
import sys

import pytest
from terminal_session import assert_stopped_in_one_line, interrupt_at

from mha_explorer.cli import main


def run_main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_a_comparison_of_too_many_tiles_is_skipped_with_its_reason():
    # 512² tiles of 1×1: minutes of small torch calls, one by one
    rc, out, err = run_main(["tiles", "--d-model", "8", "--heads", "1", "--batch", "1", "--seq", "512",
                             "--block", "1,1", "--json"])
    assert rc == 0 and err == "", err
    report = json.loads(out)
    assert report["max_abs_diff_vs_full"] is None
    assert any("262,144 tiles of 1×1" in n and "larger blocks" in n for n in report["notes"]), report["notes"]
    rc, out, _err = run_main(["tiles", "--d-model", "8", "--heads", "1", "--batch", "1", "--seq", "512",
                              "--block", "16,16", "--json"])  # larger blocks: compared
    assert rc == 0 and json.loads(out)["max_abs_diff_vs_full"] < 1e-4


@pytest.mark.skipif(sys.platform.startswith("win"), reason="POSIX terminals and signals")
def test_counting_many_tiles_shows_a_bar_and_ctrl_c_stops_it():
    # a strided mask over 16,384² keys in 1×1 tiles: seconds of scanning, a bar meanwhile
    run = interrupt_at(["tiles", "--seq", "16384", "--stride", "2", "--block", "1,1", "--json"],
                       b"counting tiles:")
    assert_stopped_in_one_line(run)  # and no report for a count that did not finish

