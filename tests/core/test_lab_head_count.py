"""The head-count lesson: a task whose two places must be told apart, and the sentence
that reads the course's trade-off (too few heads, too many) off a sweep."""

import numpy as np

from mha_explorer.core.lab.lesson import head_count_story
from mha_explorer.core.lab.tasks import build

VOCAB = 10


def _swap_halves_of_source(draws: np.ndarray) -> np.ndarray:
    """The same symbols with the two places every answer reads exchanged."""
    n = draws.shape[1] // 2
    swapped = draws.copy()
    swapped[:, :n] = np.roll(draws[:, :n], -(n // 2), axis=1)
    return swapped


def test_subtract_needs_to_know_which_place_is_which_unlike_add():
    # one head that averages its two places equally sees the same thing either way round;
    # add's answers do not change when the places swap, subtract's turn into their negatives
    draws = np.random.default_rng(3).integers(0, VOCAB, size=(200, 16))
    swapped = _swap_halves_of_source(draws)
    _, added, scored = build("add", draws, VOCAB)
    _, added_swapped, _ = build("add", swapped, VOCAB)
    _, subtracted, _ = build("subtract", draws, VOCAB)
    _, subtracted_swapped, _ = build("subtract", swapped, VOCAB)
    assert scored[:, 8:].all()
    assert (added_swapped[:, 8:] == added[:, 8:]).all()
    assert (subtracted_swapped[:, 8:] == (-subtracted[:, 8:]) % VOCAB).all()
    assert (subtracted_swapped[:, 8:] != subtracted[:, 8:]).mean() > 0.7  # all but a - b = 0 or 5


def test_too_few_and_too_many_heads_are_each_named_with_their_cost():
    story = head_count_story(64, [(16, 0.61, None), (1, 0.39, None), (2, 1.0, 680), (4, 1.0, 730),
                                  (8, 0.64, None)])
    assert "First to 95 %: 2 heads (d_k 32), at step 680" in story
    fewer, more = story.split("Fewer heads: ")[1].split("More heads: ")
    assert "1 head (d_k 64) ended at 39 %" in fewer and "16" not in fewer
    assert "4 heads (d_k 16) 95 % at step 730 (+50)" in more
    assert "8 heads (d_k 8) ended at 64 %" in more and "16 heads (d_k 4) ended at 61 %" in more


def test_a_sweep_that_every_count_learns_says_what_each_cost_in_steps():
    story = head_count_story(64, [(1, 1.0, 580), (2, 1.0, 450), (4, 1.0, 460)])
    assert "First to 95 %: 2 heads" in story
    assert "1 head (d_k 64) 95 % at step 580 (+130)" in story
    assert "4 heads (d_k 16) 95 % at step 460 (+10)" in story
    assert "ended at" not in story


def test_no_count_reaching_the_goal_is_said_and_one_run_asks_for_a_sweep():
    story = head_count_story(64, [(1, 0.26, None), (2, 0.88, None)])
    assert "No count reached 95 % in these steps: 1 head (d_k 64) ended at 26 %; 2 heads (d_k 32) ended " \
           "at 88 %" in story
    assert "Fewer heads" not in story and "More heads" not in story  # no trade-off read off nothing
    assert head_count_story(64, [(4, 1.0, 100)]).startswith("Sweep several head counts")
