"""Gemma 3's tokenizer, built by the app from the GGUF vocabulary, against transformers'.

The reference is transformers' ``GemmaTokenizer`` read from the same GGUF file (joined
from the installed chunks into a temporary folder), built once for this module: it
derives its merges with its own code, so equal ids on awkward text mean the app
reads the vocabulary the way transformers does.
"""

from __future__ import annotations

import pytest

from mha_explorer.core.models.gemma3 import files

AVAILABLE, WHY = files.is_available()
pytestmark = [pytest.mark.skipif(not AVAILABLE, reason=WHY), pytest.mark.xdist_group("trained-models")]

AWKWARD = (
    "The capital of France is",
    "naïve café in Zürich — «quotes», ‘curly’ ones and a dash–like sign",
    "日本語のテキストと中文字符, 한국어 문장, العربية, עברית, Ελληνικά, русский",
    "emoji 😀👍🏽 family 👩‍👩‍👧 flag 🇫🇷 keycap 1️⃣",
    "digits 0123456789, pi 3.14159, 1,000,000 and 2024-11-25T17:05",
    "many     spaces   between  words    ",
    "  two leading spaces and one trailing ",
    "new\nline\n\n\nthree, windows\r\nline end",
    "tabs\tand\t\tdouble tabs\t\t\t",
    "control \x00 \x01 \x7f and zero-width\u200bspace",
    "rare glyphs: 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮ 𓀀 𐍈 ",
    "<start_of_turn>user\nhello<end_of_turn>\n<start_of_turn>model\n",
    "<table><tr><td>cell</td></tr></table> <h1>title</h1>",
    "def f(x):\n    return {'a': x ** 2}  # comment\n",
    "https://example.org/path?q=1&r=two#frag user@example.org",
    "",
)


@pytest.fixture(scope="module")
def ours():
    from mha_explorer.core.models.gemma3.tokenizer import gemma_tokenizer

    return gemma_tokenizer()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("gguf")
    with open(folder / "gemma3.gguf", "wb") as out:
        for chunk in files.chunk_paths():
            out.write(chunk.read_bytes())
    return transformers.GemmaTokenizer.from_pretrained(str(folder), gguf_file="gemma3.gguf")


@pytest.mark.parametrize("text", AWKWARD, ids=[repr(t[:24]) for t in AWKWARD])
def test_ids_equal_transformers(ours, reference, text):
    ids, pieces = ours.encode(text)
    assert ids == reference(text)["input_ids"]
    assert ids[0] == 2 and pieces[0] == "<bos>"
    assert len(pieces) == len(ids)


@pytest.mark.parametrize("text", AWKWARD, ids=[repr(t[:24]) for t in AWKWARD])
def test_decoding_gives_the_text_back(ours, text):
    ids, _ = ours.encode(text)
    assert ours.decode(ids[1:]) == text
    assert ours.decode(ids) == "<bos>" + text


def test_without_bos_nothing_is_added(ours):
    assert ours.encode("hello world", bos=False)[0] == ours.encode("hello world")[0][1:]


def test_digits_are_split_one_by_one(ours):
    _, pieces = ours.encode("x 20241125")
    assert pieces[-8:] == list("20241125")


def test_runs_of_spaces_and_newlines_are_pieces_of_their_own(ours):
    _, pieces = ours.encode("a   b\n\nc")
    assert "▁▁▁" in pieces or "▁▁" in pieces  # the spaces stay together
    assert "\\n\\n" in pieces  # shown escaped, one piece for the blank line


def test_a_character_outside_the_vocabulary_falls_back_to_its_bytes(ours):
    candidates = ("𓀀", "ꙮ", "𐍈", "\U0001fae8", "\U00010338")
    found = [c for c in candidates if any(p.startswith("<0x") for p in ours.encode(c, bos=False)[1])]
    assert found, "none of the candidates is outside the vocabulary"
    for char in found:
        ids, pieces = ours.encode(char, bos=False)
        assert all(p.startswith("<0x") and p.endswith(">") for p in pieces)
        assert bytes(int(p[3:5], 16) for p in pieces) == char.encode("utf-8")
        assert ours.decode(ids) == char
