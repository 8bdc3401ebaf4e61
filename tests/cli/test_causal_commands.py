"""``patch``, ``lens`` and ``heads --repeat``: what a script reads, one line and exit code 2 for
every input refused (naming the pieces when tokens are the reason), and a bar on a terminal
that Ctrl+C stops. Their numbers are checked against transformers in
tests/core/test_causal_reference.py."""

from __future__ import annotations

import json
import sys

import pytest
from terminal_session import assert_stopped_in_one_line, interrupt_at

from mha_explorer.cli import main
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.causal.example import ANSWER, CLEAN, CORRUPT, WRONG
from mha_explorer.core.models.gemma3 import files

AVAILABLE, WHY = files.is_available()
needs_gemma = pytest.mark.skipif(not AVAILABLE, reason=WHY)
PREFIX = "mha-explorer: error: "


def _refused(capsys, *argv: str) -> str:
    assert main(list(argv)) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(PREFIX) and err.count("\n") == 1, err
    return err[len(PREFIX):].strip()


@pytest.fixture(scope="module")
def tokens():
    from mha_explorer.core.models.gemma3.model import load_model

    return load_model().encode


@pytest.mark.parametrize("argv, words", [
    (["heads", "--weights", "minilm-l6", "--repeat", "5"], "encoder"),
    (["heads", "--weights", "gemma3-270m", "--repeat", "1"], "from 2 to"),
    (["heads", "--weights", "gemma3-270m", "--repeat", "abc"], "--repeat: 'abc' is not a whole number"),
    (["heads", "--weights", "gemma3-270m", "--repeat", "3", "--seed", "1.5"], "'1.5' is not a whole number"),
    (["heads", "--weights", "gemma3-270m", "--repeat", "5", "--layer", "2"], "leave --layer"),
    (["heads", "--weights", "gemma3-270m", "--repeat", "5", "--mean"], "add --ablate"),
    (["heads", "--weights", "gemma3-270m", "--mean", "--layer", "1", "--sentence", "hi"], "--repeat"),
    (["heads", "--weights", "gemma3-270m"], "needs --layer and --sentence"),
    (["lens", "--weights", "minilm-l6", "--text", "hi"], "encoder"),
    (["lens", "--weights", "gpt2", "--text", "hi"], "'gpt2'"),
    (["patch", "--weights", "minilm-l6", "--clean", "a", "--corrupt", "b", "--answer", "a", "--wrong", "b"],
     "encoder"),
])
def test_inputs_refused_before_any_model_loads(capsys, argv, words):
    assert words in _refused(capsys, *argv)


@needs_gemma
def test_the_lens_refuses_an_empty_text(capsys):
    assert "empty" in _refused(capsys, "lens", "--weights", "gemma3-270m", "--text", "  ")


@needs_gemma
def test_patch_refuses_prompts_of_different_lengths_naming_where_they_part(capsys, tokens):
    corrupt = "When Mary and John went to the store, Mary went to"
    message = _refused(capsys, "patch", "--weights", "gemma3-270m", "--clean", CLEAN, "--corrupt", corrupt,
                       "--answer", ANSWER, "--wrong", WRONG)
    (a, pa), (b, pb) = tokens(CLEAN), tokens(corrupt)
    at = next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
    assert f"the clean prompt is {len(a)} tokens and the corrupted one {len(b)}" in message
    assert f"From token {at + 1}" in message and repr(pa[at]) in message and repr(pb[at]) in message


@needs_gemma
@pytest.mark.parametrize("flag", ["--answer", "--wrong"])
def test_patch_refuses_an_answer_of_several_tokens_naming_them(capsys, tokens, flag):
    long = " Maryanne-Louise"
    ids, pieces = tokens(long, bos=False)
    assert len(ids) > 1
    answers = {"--answer": ANSWER, "--wrong": WRONG, flag: long}
    message = _refused(capsys, "patch", "--weights", "gemma3-270m", "--clean", CLEAN, "--corrupt", CORRUPT,
                       "--answer", answers["--answer"], "--wrong", answers["--wrong"])
    assert f"{long!r} is {len(ids)} tokens" in message
    assert all(repr(p) in message for p in pieces)
    assert "same token" in _refused(capsys, "patch", "--weights", "gemma3-270m", "--clean", CLEAN,
                                    "--corrupt", CORRUPT, "--answer", ANSWER, "--wrong", ANSWER)


@pytest.mark.parametrize("model", [m for m in MODELS.values() if m.causal], ids=lambda m: m.key)
def test_every_decoder_loads_and_refuses_an_answer_of_several_tokens(capsys, model):
    ok, why = runtime.is_available(model)
    if not ok:
        pytest.skip(why)
    from mha_explorer.core.models.decoder.kit import kit_for

    long = " Maryanne-Louise"
    ids, pieces = kit_for(model).load_model().encode(long, bos=False)
    message = _refused(capsys, "patch", "--weights", model.key, "--clean", CLEAN, "--corrupt", CORRUPT,
                       "--answer", long, "--wrong", WRONG)
    assert f"{long!r} is {len(ids)} tokens" in message and all(repr(p) in message for p in pieces)


@needs_gemma
def test_a_top_token_that_cannot_stand_alone_is_written_as_its_label():
    from mha_explorer.core.models.causal.report import token_texts
    from mha_explorer.core.models.gemma3.model import load_model

    model = load_model()
    tok = model.tokenizer
    byte, newline = tok.token_id("<0xE2>"), tok.token_id("\\n")
    paris = model.encode(" Paris", bos=False)[0][0]
    assert tok.token_text(byte) == "\ufffd" and tok.token_text(newline) == "\n"  # what a cell shows alone
    assert token_texts(model, [byte, newline, paris]) == ["<0xE2>", "\\n", " Paris"]


@needs_gemma
def test_the_lens_json_and_its_summary(capsys, tokens):
    text = "One, two, three,"
    assert main(["lens", "--weights", "gemma3-270m", "--text", text, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"weights", "token_ids", "layers", "attribution"}
    assert report["token_ids"] == tokens(text)[0]
    assert set(report["attribution"]) == {"position", "token_id", "logit", "components", "sum", "tolerance"}
    assert [c["name"] for c in report["attribution"]["components"][:6]] == [
        "embedding", "L1 h0", "L1 h1", "L1 h2", "L1 h3", "L1 MLP"]
    assert main(["lens", "--weights", "gemma3-270m", "--text", text]) == 0
    shown = capsys.readouterr().out
    a = report["attribution"]
    assert "after 18:" in shown and f": {a['logit']:.3f} = the sum of {len(a['components'])} parts" in shown


@needs_gemma
@pytest.mark.skipif(sys.platform.startswith("win"), reason="POSIX terminals and signals")
def test_switching_every_head_off_shows_a_bar_and_ctrl_c_stops_it():
    run = interrupt_at(["heads", "--weights", "gemma3-270m", "--repeat", "200", "--ablate", "--json"],
                       b"switching heads off:")
    assert_stopped_in_one_line(run)
