"""Head pattern scores: their definitions on maps worked out by hand, and the real
previous-token head of MiniLM-L6's first layer."""

from __future__ import annotations

import numpy as np
import pytest

from mha_explorer.core.models import patterns


def _one_hot_rows(targets: list[int], S: int) -> np.ndarray:
    a = np.zeros((len(targets), S))
    a[np.arange(len(targets)), targets] = 1.0
    return a


def test_a_map_looking_one_token_back_scores_as_previous_token():
    # row 0 has no previous token and looks at itself; rows 1..4 look one back
    a = _one_hot_rows([0, 0, 1, 2, 3], 5)
    s = {k: float(v) for k, v in patterns.scores(a).items()}
    assert s["previous_token"] == pytest.approx(1.0)
    assert s["next_token"] == pytest.approx(0.0)
    assert s["self"] == pytest.approx(1 / 5)  # only row 0
    assert s["first_token"] == pytest.approx(2 / 5)  # rows 0 and 1 look at token 0
    assert s["broad"] == pytest.approx(0.0)
    assert float(patterns.entropy_bits(a)) == pytest.approx(0.0)


def test_a_map_looking_ahead_scores_as_next_token():
    a = _one_hot_rows([1, 2, 3, 3], 4)  # the last row has no next token and stays
    s = patterns.scores(a)
    assert float(s["next_token"]) == pytest.approx(1.0)
    assert float(s["self"]) == pytest.approx(1 / 4)


def test_an_even_spread_is_broad_with_log2_s_bits():
    tokens = ["[CLS]", "a", "b", "[SEP]"]
    a = np.full((4, 4), 0.25)
    s = {k: float(v) for k, v in patterns.scores(a, tokens).items()}
    assert s["broad"] == pytest.approx(1.0)
    assert float(patterns.entropy_bits(a)) == pytest.approx(2.0)  # log2 of 4 keys
    for name in ("previous_token", "next_token", "self", "first_token", "sep"):
        assert s[name] == pytest.approx(0.25)


def test_attention_parked_on_sep_or_cls_is_a_sink():
    tokens = ["[CLS]", "x", "y", "[SEP]", "z", "[SEP]"]
    on_seps = np.zeros((6, 6))
    on_seps[:, 3] = 0.5
    on_seps[:, 5] = 0.5
    assert float(patterns.scores(on_seps, tokens)["sep"]) == pytest.approx(1.0)
    assert float(patterns.scores(on_seps)["sep"]) == 0.0  # without labels there is no [SEP]
    on_cls = _one_hot_rows([0] * 6, 6)
    heads = patterns.head_scores(np.stack([on_cls, on_seps]), tokens)
    assert heads[0]["first_token"] == pytest.approx(1.0) and heads[1]["first_token"] == 0.0
    assert patterns.badge(heads[0]) == "first 1.00"


def test_scores_of_random_maps_stay_in_range():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(8, 7, 7)) * 3
    maps = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    table = patterns.scores(maps)
    for name in patterns.PATTERN_NAMES:
        assert table[name].shape == (8,)
        assert np.all((table[name] >= 0) & (table[name] <= 1 + 1e-12)), name
    with pytest.raises(ValueError, match="3 key labels"):
        patterns.scores(maps, ["a", "b", "c"])


PREVIOUS_TOKEN_SENTENCES = (
    "the cat sat on the mat because it was tired",
    "students read meaning into the noise of untrained attention maps",
    "Every head of a transformer layer learns its own way of looking back.",
)


@pytest.mark.parametrize("sentence", PREVIOUS_TOKEN_SENTENCES)
def test_layer_one_has_a_previous_token_head(sentence):
    from mha_explorer.core.models.minilm.files import is_available

    ok, why = is_available()
    if not ok:
        pytest.skip(why)
    from mha_explorer.core.models.minilm.report import sentence_maps

    found = sentence_maps(sentence)
    layer1 = found.maps[0]  # [H, T, T]
    prev = patterns.scores(layer1, found.tokens)["previous_token"]
    assert prev[2] > 0.9  # head 2 (0-based) copies from the token before
    assert np.delete(prev, 2).max() < 0.5  # and it is the only one that does
    # its own definition, by hand: the weight on the previous token, row by row
    assert np.mean([layer1[2, i, i - 1] for i in range(1, len(found.tokens))]) == pytest.approx(prev[2])


def test_grid_badges_name_the_previous_token_head():
    from mha_explorer.core.models.minilm.files import is_available

    ok, why = is_available()
    if not ok:
        pytest.skip(why)
    from mha_explorer.core.models.minilm.report import grid_badges, pieces_maps
    from mha_explorer.core.models.minilm.tokenizer import wordpieces

    found = pieces_maps(wordpieces(PREVIOUS_TOKEN_SENTENCES[1]))
    assert found.maps.shape == (6, 12, len(found.tokens), len(found.tokens))
    badges = grid_badges(found)
    assert [len(row) for row in badges] == [12] * 6
    name, value = badges[0][2].split()
    assert name == "prev" and float(value) > 0.9


def test_the_layers_dock_s_job_stops_when_asked():
    """The Layers dock's job runs on the window's one jobs thread: closing the window asks it
    to stop, and it must not first load and run the whole model."""
    from mha_explorer.core.display.layers import all_layers
    from mha_explorer.core.errors import Cancelled
    from mha_explorer.core.models.minilm.files import is_available

    ok, why = is_available()
    if not ok:
        pytest.skip(why)
    looks = []
    with pytest.raises(Cancelled):
        all_layers("minilm-l6", ("[CLS]", "the", "cat", "[SEP]"), cancel=lambda: not looks.append(1))
    assert len(looks) == 1


def test_reading_every_layer_names_each_layer_as_it_goes():
    """The Layers dock's job says which layer it is reading, for the status line."""
    from mha_explorer.core.display.layers import all_layers
    from mha_explorer.core.models.catalog import model_named
    from mha_explorer.core.models.minilm.files import is_available

    ok, why = is_available()
    if not ok:
        pytest.skip(why)
    heard = []
    found = all_layers("minilm-l6", ("[CLS]", "the", "cat", "[SEP]"),
                       progress=lambda f, words: heard.append((f, words)))
    layers = model_named("minilm-l6").layers
    assert len(found.maps) == layers == len(heard)
    assert heard[2] == (3 / layers, f"reading layer 3 of {layers}…")
    assert [f for f, _ in heard] == sorted(f for f, _ in heard) and heard[-1][0] == 1.0


def test_the_ablation_job_stops_when_asked():
    from mha_explorer.core.display.layers import layer_ablation
    from mha_explorer.core.errors import Cancelled
    from mha_explorer.core.models.minilm.files import is_available

    ok, why = is_available()
    if not ok:
        pytest.skip(why)
    looks = []
    with pytest.raises(Cancelled):
        layer_ablation("minilm-l6", 1, ("[CLS]", "the", "cat", "[SEP]"), cancel=lambda: not looks.append(1))
    assert len(looks) == 1
