"""--sentence sets T from its words: a --seq that disagrees is explained, not ignored."""

from __future__ import annotations

from tests.cli.test_cli_invalid import assert_one_line_error, run_main


def test_a_sentence_and_a_different_seq_are_refused_naming_both():
    message = assert_one_line_error(*run_main(["shapes", "--sentence", "the cat sat", "--seq", "5"]))
    assert "--sentence" in message and "--seq" in message
    assert "3 words" in message and "5" in message


def test_a_sentence_and_the_same_seq_agree():
    rc, out, err = run_main(["shapes", "--sentence", "the cat sat", "--seq", "3"])
    assert rc == 0 and err == ""
    assert "T=3 " in out.splitlines()[0]
