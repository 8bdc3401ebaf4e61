"""Every invalid flag value is one line on stderr, exit code 2, and no traceback.

``main([...])`` in this process covers the many cases fast; a handful go through
a real ``python -m mha_explorer`` for what only a process shows (the exit code,
stderr as the terminal gets it). The worked examples of error wording are in
test_shapes_cli.py; here the point is that nothing escapes.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mha_explorer.cli import main, one_line

PREFIX = "mha-explorer: error: "

# flag -> how its field is named in messages (the flag itself for parse errors)
INT_FLAGS = {
    "--d-model": "d_model", "--heads": "heads", "--kv-heads": "key/value heads",
    "--batch": "batch", "--seq": "sequence length", "--kv-seq": "key/value length",
    "--seed": "seed",
}
BAD_INTS = ["0", "-1", "1.5", "abc", str(10**12), ""]
CHOICE_FLAGS = {
    "--dtype": ["float64", "fp16", "FLOAT32", ""],
    "--device": ["tpu", "CPU", "cuda:0", ""],
    "--causal-alignment": ["centre", "top_left", "bottom right", ""],
}


def run_main(argv: list[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of main(argv), an argparse exit included."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:  # --help and the like exit through argparse
            rc = exc.code
    return rc, out.getvalue(), err.getvalue()


def assert_one_line_error(rc: int, out: str, err: str) -> str:
    assert rc == 2, (rc, out, err)
    assert out == ""
    assert err.startswith(PREFIX) and err.endswith("\n"), err
    assert len(err.splitlines()) == 1 and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err[len(PREFIX):-1]


def int_cases():
    for flag, label in INT_FLAGS.items():
        for value in BAD_INTS:
            if flag == "--seed" and value == "0":
                continue  # seed 0 is valid
            yield flag, label, value


# --- in process ------------------------------------------------------------------

@pytest.mark.parametrize("where", ["after", "before"])  # shapes --heads 0 | --heads 0 shapes
@pytest.mark.parametrize("flag,label,value", list(int_cases()))
def test_bad_int_flag(flag, label, value, where):
    argv = ["shapes", flag, value] if where == "after" else [flag, value, "shapes"]
    message = assert_one_line_error(*run_main(argv))
    assert flag in message or label in message, message
    if value:
        assert value in message.replace(",", ""), message  # says what it read


@pytest.mark.parametrize("flag,value", [(f, v) for f, vs in CHOICE_FLAGS.items() for v in vs])
def test_bad_choice(flag, value):
    message = assert_one_line_error(*run_main(["shapes", flag, value]))
    assert flag in message and "invalid choice" in message


@pytest.mark.parametrize("value", ["unknown", "", "GPT2", "gpt2 "])
def test_unknown_preset(value):
    message = assert_one_line_error(*run_main(["shapes", "--preset", value]))
    assert f"unknown preset '{value}'" in message and "gpt2" in message


@pytest.mark.parametrize("value", ["", " ", "\t\n"])
def test_sentence_without_words(value):
    message = assert_one_line_error(*run_main(["shapes", "--sentence", value]))
    assert "no words" in message


@pytest.mark.parametrize("argv,fragment", [
    (["shapes", "--bogus"], "--bogus"),
    (["--bogus", "shapes"], "--bogus"),
    (["shapes", "--d_model", "64"], "--d_model"),
    (["shapes", "-x"], "-x"),
    (["shapes", "--causal=yes"], "--causal"),
    (["shapes", "--json=1"], "--json"),
    (["shapes", "extra"], "extra"),
    (["bogus-command"], "bogus-command"),
])
def test_unknown_flags_and_words(argv, fragment):
    assert fragment in assert_one_line_error(*run_main(argv))


@pytest.mark.parametrize("argv,flag", [
    (["shapes", "--heads"], "--heads"),
    (["shapes", "--heads", "--seq", "4"], "--heads"),
    (["shapes", "--dtype"], "--dtype"),
    (["shapes", "--sentence"], "--sentence"),
    (["shapes", "--preset"], "--preset"),
    (["--heads"], "--heads"),
])
def test_missing_value(argv, flag):
    message = assert_one_line_error(*run_main(argv))
    assert flag in message and "expected one argument" in message


@pytest.mark.parametrize("value", ["a\nb", "a\rb", "a\r\nb", "a\u2028b", "a\x85b", "a\x0bb"])
def test_a_line_break_typed_into_a_value_stays_on_one_line(value):
    for argv in (["shapes", "--heads", value], ["shapes", "--preset", value], ["shapes", value]):
        message = assert_one_line_error(*run_main(argv))
        assert "a" in message and "b" in message  # still shows what was typed


def test_one_line_escapes_only_line_breaks():
    assert one_line("plain — text, ×") == "plain — text, ×"
    assert one_line("a\nb\rc\u2028d") == "a\\nb\\rc\\u2028d"


# --- random argv --------------------------------------------------------------------

FLAGS = ["--preset", "--d-model", "--heads", "--kv-heads", "--batch", "--seq", "--kv-seq",
         "--sentence", "--causal", "--no-causal", "--causal-alignment", "--bias", "--no-bias",
         "--dtype", "--device", "--seed", "--json", "--list-presets", "--", "-"]
VALUES = ["0", "-1", "1", "2", "4", "8", "12", "64", "768", "1.5", "abc", "", "1_024", "10,000",
          str(10**12), "9" * 5000, "float16", "bfloat16", "cpu", "cuda", "bottom-right",
          "top-left", "gpt2", "falcon-7b", "the cat sat", "shapes"]
argv_tokens = st.lists(
    st.one_of(st.sampled_from(FLAGS), st.sampled_from(VALUES),
              st.text(st.characters(blacklist_categories=("Cs",)), max_size=8),
              st.sampled_from(FLAGS).map(lambda f: f + "=") .flatmap(
                  lambda f: st.sampled_from(VALUES).map(lambda v: f + v))),
    max_size=10,
)


@given(tokens=argv_tokens)
def test_shapes_with_random_argv_exits_0_or_one_line_2(tokens):
    rc, out, err = run_main(["shapes", *tokens])
    assert rc in (0, 2), (rc, err)
    if rc == 2:
        assert_one_line_error(rc, out, err)
    else:
        assert out and err == ""


# --- real processes ----------------------------------------------------------------

def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mha_explorer", *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "100"})


@pytest.mark.parametrize("args", [
    ["shapes", "--heads", "0"],
    ["shapes", "--seed", "1.5"],
    ["shapes", "--kv-seq", str(10**12)],
    ["shapes", "--device", "tpu"],
    ["shapes", "--sentence", ""],
    ["shapes", "--heads"],
    ["shapes", "--preset", "a\r\nb"],  # text mode reads \r as a line break too
    ["--bogus"],
    ["shapes", "--attention", "mla", "--kv-heads", "2"],
    ["shapes", "--window", "4", "--stride", "0"],
])
def test_a_real_process_exits_2_with_one_line(args):
    r = cli(*args)
    assert_one_line_error(r.returncode, r.stdout, r.stderr)


# --- variant combinations ------------------------------------------------------------

VARIANT_BAD = [
    (["--kv-lora-rank", "64"], "latent attention is off"),
    (["--q-lora-rank", "8", "--attention", "mha"], "q_lora_rank belongs to latent attention"),
    (["--attention", "mla", "--kv-heads", "2"], "--kv-heads 2"),
    (["--attention", "mqa", "--kv-heads", "4"], "--attention mqa means one key/value head"),
    (["--attention", "gqa", "--d-model", "448", "--heads", "7"], "7 heads have no divisor between 1 and 7"),
    (["--attention", "mla", "--qk-rope-dim", "5"], "qk_rope_head_dim 5 must be even"),
    (["--global-tokens", "3"], "global tokens only widen"),
    (["--window", "2", "--global-tokens", "99", "--seq", "8"], "99 global tokens is more than the 8"),
    (["--positions", "rope", "--d-model", "9", "--heads", "3"], "odd width"),
    (["--attention", "latent"], "--attention"),
    (["--window", "wide"], "'wide' is not a whole number"),
]


@pytest.mark.parametrize("command", ["shapes", "export"])
@pytest.mark.parametrize("argv,fragment", VARIANT_BAD)
def test_invalid_variant_combinations_are_one_line_naming_the_fields(command, argv, fragment, tmp_path):
    extra = ["--out", str(tmp_path / "out")] if command == "export" else []
    message = assert_one_line_error(*run_main([command, *argv, *extra]))
    assert fragment in message


def test_export_of_latent_attention_draws_its_own_stages(tmp_path):
    rc, out, err = run_main(["export", "--attention", "mla", "--d-model", "16", "--heads", "2", "--seq", "3",
                             "--format", "png", "--size", "640x360", "--out", str(tmp_path / "out")])
    assert rc == 0 and err == ""
    names = {p.name for p in (tmp_path / "out").iterdir()}
    assert {"03-kv_compress.png", "04-kv_expand.png", "05-heads.png"} <= names  # the latent steps
