"""The installed command line as a person runs it: ``python -m mha_explorer ...`` in a
subprocess, for heads, decode and tiles and the trained-weights flags of the others."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mha_explorer.core.models.minilm.files import is_available

ROOT = Path(__file__).resolve().parents[2]
AVAILABLE, WHY = is_available()
needs_package = pytest.mark.skipif(not AVAILABLE, reason=WHY)
PREFIX = "mha-explorer: error: "


def run_cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mha_explorer", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_help_lists_the_new_commands_and_the_weights_flags():
    done = run_cli("--help")
    assert done.returncode == 0
    for word in ("heads", "decode", "tiles", "--weights", "--layer", "minilm-l6"):
        assert word in done.stdout


@needs_package
def test_heads_prints_one_map_per_head_over_the_word_pieces():
    done = run_cli("heads", "--weights", "minilm-l6", "--layer", "2", "--sentence", "untiring cats",
                   "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["layer"] == 2
    assert report["tokens"] == ["[CLS]", "un", "##ti", "##ring", "cats", "[SEP]"]
    assert len(report["heads"]) == 12
    assert all(len(h["weights"]) == 6 and len(h["weights"][0]) == 6 for h in report["heads"])


def test_decode_json_through_the_main_command():
    done = run_cli("decode", "--d-model", "32", "--heads", "4", "--kv-heads", "1", "--batch", "2",
                   "--prompt", "3", "--steps", "2", "--json")
    assert done.returncode == 0, done.stderr
    steps = json.loads(done.stdout)["steps"]
    assert [s["cache_tokens"] for s in steps] == [3, 4, 5]
    # MQA: one key/value head of d_k = 8, K and V, batch 2, float32
    assert [s["cache_bytes"] for s in steps] == [2 * 2 * 1 * n * 8 * 4 for n in (3, 4, 5)]


def test_tiles_json_through_the_main_command():
    done = run_cli("tiles", "--d-model", "16", "--heads", "2", "--seq", "9", "--causal",
                   "--block", "4,4", "--json")
    assert done.returncode == 0, done.stderr
    d = json.loads(done.stdout)
    # 3 × 3 tiles; causal (T = S): the tiles above the diagonal are skipped
    assert d["blocks_total"] == 9 and d["blocks_computed"] == 6
    assert d["max_abs_diff_vs_full"] < 1e-5


@needs_package
def test_shapes_with_trained_weights_takes_the_models_shape_and_word_pieces():
    done = run_cli("shapes", "--weights", "minilm-l6", "--layer", "4", "--sentence", "untiring cats",
                   "--json")
    assert done.returncode == 0, done.stderr
    cfg = json.loads(done.stdout)["config"]
    assert (cfg["d_model"], cfg["n_heads"], cfg["bias"], cfg["layer"]) == (384, 12, True, 4)
    assert cfg["tokens"] == ["[CLS]", "un", "##ti", "##ring", "cats", "[SEP]"] and cfg["seq"] == 6


@pytest.mark.parametrize(("argv", "words"), [
    (("shapes", "--weights", "minilm-l6", "--layer", "7"), "layers 1 to 6"),
    (("shapes", "--weights", "minilm-l6", "--heads", "8"), "12"),
    (("shapes", "--weights", "minilm-l6", "--sentence", " "), "no words"),
    (("shapes", "--weights", "bert"), "invalid choice"),
    (("heads", "--layer", "9", "--sentence", "hi", "--json"), "layers 1 to 6"),
    (("decode", "--prompt", "0", "--json"), "prompt"),
    (("tiles", "--block", "0,4", "--json"), "block size"),
])
def test_bad_input_is_one_line_and_exit_2(argv, words):
    if "minilm-l6" in argv and not AVAILABLE and "bert" not in argv:
        pytest.skip(WHY)
    done = run_cli(*argv)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(PREFIX) and done.stderr.count("\n") == 1 and words in done.stderr


def test_a_saved_trained_config_opens_without_reading_the_tokenizer_again(monkeypatch):
    import argparse

    from mha_explorer.cli import common
    from mha_explorer.core.config import MHAConfig
    from mha_explorer.core.config.rules import trained_fields
    from mha_explorer.core.models import runtime
    from mha_explorer.core.models.minilm.description import MINILM_L6

    def no_tokenizer(_model, _tokens):
        raise AssertionError("the tokenizer was read")

    monkeypatch.setattr(runtime, "as_pieces", no_tokenizer)
    pieces = ("[CLS]", "hi", "[SEP]")
    saved = MHAConfig(**{**trained_fields(MINILM_L6, 2), "weights": "minilm-l6", "layer": 2,
                         "tokens": pieces, "seq": 3})
    cfg = common.config_from_args(argparse.Namespace(batch=3), saved)
    assert (cfg.weights, cfg.layer, cfg.tokens, cfg.batch) == ("minilm-l6", 2, pieces, 3)
