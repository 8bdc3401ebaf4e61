"""A tokenizer built and run in a process of its own answers as the one built here: the same
pieces, ids, text, vocabulary and added pieces; an error there is raised here as itself; a
helper that dies is replaced at the next request."""

from __future__ import annotations

import os
import signal

import pytest

from mha_explorer.core.errors import ConfigError
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.tokenizer_process import TokenizerProcess, TokenizerProcessLost

TEXTS = ("The cat sat on the mat.", "naïve café — «quotes» 日本語 😀👍🏽", "new\nline\ttab  two  spaces ", "")
MINILM = "mha_explorer.core.models.minilm.tokenizer:read_tokenizer"
DECODER = "mha_explorer.core.models.decoder.tokenizer:read_tokenizer"


def _needs(key: str):
    ok, why = runtime.is_available(MODELS[key])
    return pytest.mark.skipif(not ok, reason=why)


@pytest.fixture
def helper():
    process = TokenizerProcess()
    yield process
    process.close()


@_needs("minilm-l6")
def test_an_encoder_s_tokenizer_answers_as_the_one_built_here(helper):
    from mha_explorer.core.models.minilm.tokenizer import read_tokenizer

    here, there = read_tokenizer(), helper.tokenizer(MINILM)
    assert helper.pid is not None and helper.pid != os.getpid()
    for text in TEXTS:
        ours, theirs = here.encode(text), there.encode(text)
        assert (theirs.ids, theirs.tokens) == (ours.ids, ours.tokens)
        assert there.decode(ours.ids) == here.decode(ours.ids)
    size = here.get_vocab_size(with_added_tokens=True)
    assert there.get_vocab_size(with_added_tokens=True) == size
    assert [there.id_to_token(i) for i in range(size)] == [here.id_to_token(i) for i in range(size)]
    assert there.token_to_id("##ring") == here.token_to_id("##ring") and there.token_to_id("nope ##") is None
    added = here.get_added_tokens_decoder()
    assert there.get_added_tokens_decoder() == {i: token.content for i, token in added.items()}
    assert helper.tokenizer(MINILM) is there  # built once there, one stand-in here


@_needs("smollm2-135m")
def test_a_decoder_s_labels_and_text_are_those_of_the_one_built_here(helper):
    from mha_explorer.core.models.decoder.kit import kit_for
    from mha_explorer.core.models.decoder.tokenizer import DecoderTokenizer, read_tokenizer

    model = MODELS["smollm2-135m"]
    found = kit_for(model).conversion.prepare()
    args = (str(found.tokenizer), found.tokenizer_sha256)
    here = DecoderTokenizer(read_tokenizer(*args), model.decoder)
    there = DecoderTokenizer(helper.tokenizer(DECODER, args), model.decoder)
    for text in TEXTS[:-1]:
        ids, labels = here.encode(text)
        assert there.encode(text) == (ids, labels)
        assert there.decode(ids) == here.decode(ids)
        assert [there.token_id(label) for label in labels] == ids
    assert there.ordinary_ids == here.ordinary_ids


def test_an_error_there_is_raised_here_as_itself(helper, tmp_path):
    from mha_explorer.core.models.decoder.tokenizer import TokenizerFileError

    with pytest.raises(ConfigError) as raised:
        helper.tokenizer("mha_explorer.core.config.presets:get_preset", ("no-such-preset",))
    assert raised.value.field == "preset" and "unknown preset 'no-such-preset'" in raised.value.message
    stored = tmp_path / "tokenizer.json"
    stored.write_text("{}")
    with pytest.raises(TokenizerFileError, match="SHA-256 no longer matches"):
        helper.tokenizer(DECODER, (str(stored), "0" * 64))
    with pytest.raises(FileNotFoundError) as missing:
        helper.tokenizer(DECODER, (str(tmp_path / "absent.json"), "0" * 64))
    assert missing.value.filename == str(tmp_path / "absent.json")


@_needs("minilm-l6")
def test_a_helper_that_died_is_replaced(helper):
    from mha_explorer.core.models.minilm.tokenizer import read_tokenizer

    helper.tokenizer(MINILM)
    first = helper.pid
    os.kill(first, signal.SIGKILL)
    try:  # a request may still reach the dying process: it is told as the process's end
        again = helper.tokenizer(MINILM)
    except TokenizerProcessLost as lost:
        assert "the tokenizer process ended" in str(lost)
        again = helper.tokenizer(MINILM)
    assert helper.pid != first
    assert again.encode("the cat").tokens == read_tokenizer().encode("the cat").tokens
