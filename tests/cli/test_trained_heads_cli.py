"""``mha-explorer heads``: the JSON a script reads, and one line + exit 2 for every bad input.

The command is called through ``cli.heads.run`` and through a small argparse
harness that registers it as the main CLI will.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import io
import json

import numpy as np
import pytest

from mha_explorer.cli import heads as heads_command
from mha_explorer.core.models.minilm.files import is_available

AVAILABLE, WHY = is_available()
needs_package = pytest.mark.skipif(not AVAILABLE, reason=WHY)
PREFIX = "mha-explorer: error: "


def _call(argv: list[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="mha-explorer")
    heads_command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = heads_command.run(args)
    return code, out.getvalue(), err.getvalue()


@needs_package
def test_json_has_every_head_of_the_layer_with_its_map_and_patterns():
    sentence = "the cat sat on the mat because it was tired"
    code, out, err = _call(["heads", "--weights", "minilm-l6", "--layer", "1",
                            "--sentence", sentence, "--json"])
    assert code == 0 and err == ""
    report = json.loads(out)
    assert set(report) == {"weights", "layer", "token_ids", "tokens", "heads"}  # no ablation unless asked
    assert len(report["token_ids"]) == len(report["tokens"]) and report["token_ids"][0] == 101  # [CLS]
    assert report["weights"] == "minilm-l6" and report["layer"] == 1
    tokens = report["tokens"]
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and "cat" in tokens
    assert [h["head"] for h in report["heads"]] == list(range(12))
    T = len(tokens)
    for head in report["heads"]:
        weights = np.array(head["weights"])
        assert weights.shape == (T, T)
        assert np.allclose(weights.sum(axis=1), 1.0, atol=1e-4)  # each row is a softmax
        assert set(head["patterns"]) == {"previous_token", "next_token", "self", "first_token", "sep"}
        # entropy and the previous-token score follow from the printed map itself
        rows = -(weights * np.log2(np.where(weights > 0, weights, 1))).sum(axis=1)
        assert head["entropy_bits"] == pytest.approx(rows.mean(), abs=1e-4)
        assert head["patterns"]["previous_token"] == pytest.approx(
            np.mean([weights[i, i - 1] for i in range(1, T)]), abs=1e-4)
        assert head["patterns"]["sep"] == pytest.approx(weights[:, T - 1].mean(), abs=1e-4)
    assert report["heads"][2]["patterns"]["previous_token"] > 0.9


@needs_package
def test_ablate_ranks_every_head_by_its_effect_on_the_embedding():
    code, out, _ = _call(["heads", "--layer", "4", "--sentence", "a short sentence", "--json", "--ablate"])
    assert code == 0
    ranking = json.loads(out)["ablation"]
    assert sorted(r["head"] for r in ranking) == list(range(12))
    assert all(set(r) == {"head", "embedding_cosine"} for r in ranking)
    cosines = [r["embedding_cosine"] for r in ranking]
    assert cosines == sorted(cosines) and all(-1 <= c <= 1 for c in cosines)


@pytest.mark.parametrize(("argv", "words"), [
    (["--weights", "random", "--layer", "1", "--sentence", "hi"], "'random'"),
    (["--weights", "gpt2", "--layer", "1", "--sentence", "hi"], "'gpt2'"),
    (["--layer", "0", "--sentence", "hi"], "layers 1 to 6, got 0"),
    (["--layer", "7", "--sentence", "hi"], "layers 1 to 6, got 7"),
    (["--layer", "two", "--sentence", "hi"], "whole number"),
    (["--layer", "1", "--sentence", ""], "empty"),
    (["--layer", "1", "--sentence", " \t "], "empty"),
])
def test_bad_input_is_one_line_and_exit_2(argv, words):
    code, out, err = _call(["heads", *argv, "--json"])
    assert code == 2 and out == ""
    assert err.startswith(PREFIX) and err.count("\n") == 1 and words in err


@needs_package
def test_more_than_256_word_pieces_is_refused():
    code, out, err = _call(["heads", "--layer", "1", "--sentence", "word " * 255, "--json"])
    assert code == 2 and out == "" and "257 word pieces" in err and "256" in err


def test_without_the_extra_the_error_says_how_to_install(monkeypatch):
    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", not_installed)
    code, out, err = _call(["heads", "--layer", "1", "--sentence", "hello", "--json"])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and 'pip install "mha-explorer[trained]"' in err
