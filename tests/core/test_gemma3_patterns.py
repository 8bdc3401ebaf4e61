"""Head patterns for decoders (numpy, any model) and the repeated-random-tokens
demonstration of Gemma 3 270M's induction heads."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from mha_explorer.core.models import head_patterns as hp
from mha_explorer.core.models.gemma3 import files

AVAILABLE, WHY = files.is_available()
README = Path(__file__).resolve().parents[2] / "README.md"
pytestmark = pytest.mark.xdist_group("trained-models")  # one worker loads Gemma (tests/conftest.py)
needs_model = pytest.mark.skipif(not AVAILABLE, reason=WHY)


def _rows(targets: list[int], T: int) -> np.ndarray:
    """A map [T, T] where query i puts all its weight on key targets[i]."""
    a = np.zeros((T, T))
    a[np.arange(T), targets] = 1.0
    return a


IDS = [2, 50, 60, 70, 50, 60, 70]  # <bos> A B C A B C
PREVIOUS = _rows([0, 0, 1, 2, 3, 4, 5], 7)
SINK = _rows([0] * 7, 7)
INDUCTION = _rows([0, 0, 0, 0, 2, 3, 1], 7)  # second A -> first B, second B -> first C, ...


def test_previous_token_and_sink_heads_score_one():
    assert hp.previous_token(PREVIOUS) == pytest.approx(1.0)
    assert hp.first_token(SINK) == pytest.approx(1.0)
    assert hp.previous_token(SINK) == pytest.approx(1 / 6)  # only query 1's previous token is <bos>
    assert hp.self_weight(np.eye(7)) == pytest.approx(1.0)


def test_induction_weighs_what_followed_the_earlier_occurrence():
    assert hp.induction_targets(IDS) == {4: [2], 5: [3], 6: [4]}
    assert hp.induction(INDUCTION, IDS) == pytest.approx(2 / 3)  # the last C's successor was the 2nd A
    perfect = _rows([0, 0, 0, 0, 2, 3, 4], 7)
    assert hp.induction(perfect, IDS) == pytest.approx(1.0)
    assert hp.induction(PREVIOUS, IDS) == pytest.approx(0.0)


def test_induction_is_none_when_nothing_repeats():
    assert hp.induction(PREVIOUS, [2, 10, 11, 12, 13, 14, 15]) is None
    assert hp.induction(_rows([0, 0, 1], 3), [2, 9, 9]) is None  # "A A": the successor is itself


def test_scores_follow_the_leading_axes():
    maps = np.stack([PREVIOUS, SINK, INDUCTION])  # [3, T, T]
    scores = hp.pattern_scores(maps, IDS)
    assert scores["previous_token"].shape == (3,) and scores["induction"].shape == (3,)
    assert np.argmax(scores["first_token"]) == 1 and np.argmax(scores["induction"]) == 2


def test_maps_and_ids_must_agree():
    with pytest.raises(ValueError, match="6 token ids"):
        hp.induction(PREVIOUS, IDS[:-1])
    with pytest.raises(ValueError, match=r"\[\.\.\., T, T\]"):
        hp.first_token(np.zeros((3, 4)))


@pytest.fixture(scope="module")
def demo():
    """50 random tokens shown twice, seed 0: what Layers → "Induction heads" runs."""
    from mha_explorer.core.models.gemma3.induction_demo import repeat_demo
    from mha_explorer.core.models.gemma3.model import load_model

    return repeat_demo(load_model(), n=50, seed=0)


@needs_model
def test_repeated_random_tokens_show_induction_heads(demo):
    assert len(demo.token_ids) == 101 and demo.token_ids[1:51] == demo.token_ids[51:]
    assert len(set(demo.token_ids[1:51])) == 50  # distinct, so only the second copy repeats
    assert demo.loss_first > 8.0  # unpredictable: about a guess among many pieces
    assert demo.loss_second < demo.loss_first - 6.0  # copied by induction
    layer, head, score = demo.best_head()
    assert score >= 0.6 and demo.prefix_matching.shape == (18, 4)
    assert 1 <= layer <= 18 and 0 <= head <= 3


@needs_model
def test_the_readme_names_the_strongest_induction_head_the_window_finds(demo):
    """The README's picture of Gemma says which head is the strongest induction head and its
    score, as the window's summary prints them (layer 1-based, head 0-based, two decimals)."""
    said = re.search(r"layer (\d+), head (\d+) puts (\d\.\d+) of its weight on the token after the "
                     r"earlier occurrence", README.read_text(encoding="utf-8"))
    assert said is not None
    layer, head, score = demo.best_head()
    assert (str(layer), str(head), f"{score:.2f}") == said.groups()
