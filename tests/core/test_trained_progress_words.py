"""A trained model's long jobs say what they are doing as they go, for the status line:
which token a decoder is writing."""

from __future__ import annotations

import pytest

from mha_explorer.core.models.gemma3 import files

AVAILABLE, WHY = files.is_available()
pytestmark = [pytest.mark.skipif(not AVAILABLE, reason=WHY), pytest.mark.xdist_group("trained-models")]


def test_writing_names_each_token_as_it_goes():
    from mha_explorer.core.display.decoder import generate

    heard = []
    found = generate("gemma3-270m", "The cat sat on the", 3, 1, cancel=lambda: False,
                     progress=lambda f, words: heard.append((f, words)))
    assert len(found.steps) == 3
    writing = [(f, words) for f, words in heard if words.startswith("writing")]
    assert [words for _f, words in writing] == [f"writing token {k} of 3…" for k in (1, 2, 3)]
    assert writing[-1][0] == pytest.approx(1.0) and [f for f, _ in heard] == sorted(f for f, _ in heard)
