"""``lab``: the JSON a script reads, the files it saves, and one-line refusals."""

import argparse
import json

import pytest

from mha_explorer.cli import lab as cli_lab
from mha_explorer.core.lab.store import load_run


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="mha-explorer")
    cli_lab.add_parser(parser.add_subparsers(dest="command"))
    return cli_lab.run(parser.parse_args(["lab", *argv]))


TINY = ["--task", "copy", "--d-model", "8", "--steps", "6", "--seed", "1"]


def test_json_has_the_documented_shape(capsys):
    assert _run([*TINY, "--heads", "1,2", "--ablate", "--prune", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"task", "runs", "ablation", "pruning"} and report["task"] == "copy"
    assert [r["heads"] for r in report["runs"]] == [1, 2]
    for r in report["runs"]:
        assert set(r) == {"heads", "final_accuracy", "steps_to_95", "curve", "entropy_bits",
                          "prefix_matching"}
        assert len(r["entropy_bits"]) == r["heads"]
        # one prefix-matching score per curve point, at the same steps, each a mean attention weight
        assert [p[0] for p in r["prefix_matching"]] == [c[0] for c in r["curve"]]
        assert all(0 <= p[1] <= 1 for p in r["prefix_matching"])
        assert r["curve"][-1][0] == 6 and r["final_accuracy"] == r["curve"][-1][2]
        assert r["steps_to_95"] is None or r["curve"][0][0] <= r["steps_to_95"] <= 6
    # one ablation entry per head, one pruning point per number of heads removed (0..h)
    assert [(a["heads"], a["head"]) for a in report["ablation"]] == [(1, 0), (2, 0), (2, 1)]
    assert [(p["heads"], p["removed"]) for p in report["pruning"]] == [(1, 0), (1, 1), (2, 0), (2, 1), (2, 2)]


def test_same_seed_same_report(capsys):
    _run([*TINY, "--heads", "2", "--json"])
    first = capsys.readouterr().out
    _run([*TINY, "--heads", "2", "--json"])
    assert capsys.readouterr().out == first


def test_out_saves_every_run_and_the_summary(tmp_path, capsys):
    assert _run([*TINY, "--heads", "2", "--prune", "--out", str(tmp_path / "o")]) == 0
    table = capsys.readouterr().out
    assert "heads" in table and "removable" in table
    run, extra = load_run(tmp_path / "o" / "heads-2")
    assert run.spec.heads == 2 and len(extra["pruning"]["accuracy"]) == 3
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["runs"][0]["curve"] == [list(p) for p in run.curve]


@pytest.mark.parametrize("argv, words", [
    (["--task", "shuffle"], "unknown task"),
    (["--task", "copy", "--heads", "3", "--d-model", "8"], "do not divide"),
    (["--task", "copy", "--heads", "2,,4"], "comma-separated"),
    (["--task", "copy", "--steps", "many"], "not a whole number"),
    (["--task", "copy", "--steps", "0"], "out of range"),
    (["--task", "copy", "--seed", "-1"], "out of range"),
    (["--task", "copy", "--d-model", "0"], "out of range"),
])
def test_bad_input_is_one_line_and_exit_2(argv, words, capsys):
    assert _run(argv) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err


def test_out_that_is_a_file_is_refused(tmp_path, capsys):
    f = tmp_path / "f"
    f.write_text("x")
    assert _run([*TINY, "--heads", "1", "--out", str(f)]) == 2
    assert "not a folder" in capsys.readouterr().err
