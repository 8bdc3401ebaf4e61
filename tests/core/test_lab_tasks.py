"""Each generated task asks what its explanation says; checked against answers
written out by hand and against plain-Python rules."""

import numpy as np
import pytest

from mha_explorer.core.lab.tasks import TASKS, build, sample, sample_text, symbols

VOCAB = 5
BLANK = VOCAB
DRAWS = np.array([[3, 0, 4, 1, 2, 2, 0, 3]])  # n = 4


def test_copy_writes_the_source_again_into_blank_slots():
    inputs, targets, scored = build("copy", DRAWS, VOCAB)
    assert inputs[0].tolist() == [3, 0, 4, 1, BLANK, BLANK, BLANK, BLANK]
    assert targets[0, 4:].tolist() == [3, 0, 4, 1]
    assert scored[0].tolist() == [False] * 4 + [True] * 4


def test_reverse_writes_the_source_back_to_front():
    inputs, targets, scored = build("reverse", DRAWS, VOCAB)
    assert targets[0, 4:].tolist() == [1, 4, 0, 3]
    assert scored[0, 4:].all() and not scored[0, :4].any()


def test_sort_writes_the_source_in_ascending_order():
    _inputs, targets, _scored = build("sort", DRAWS, VOCAB)
    assert targets[0, 4:].tolist() == [0, 1, 3, 4]


def test_previous_token_names_the_symbol_one_earlier():
    inputs, targets, scored = build("previous-token", DRAWS, VOCAB)
    assert inputs[0].tolist() == DRAWS[0].tolist()
    assert targets[0, 1:].tolist() == [3, 0, 4, 1, 2, 2, 0]
    assert not scored[0, 0] and scored[0, 1:].all()


def test_induction_repeats_the_run_and_asks_for_the_next_symbol():
    inputs, targets, scored = build("induction", DRAWS, VOCAB)
    assert inputs[0].tolist() == [3, 0, 4, 1, 3, 0, 4, 1]
    # in the repeat, position 4 (a 3) is followed by 0, then 4, then 1; the last has no next
    assert targets[0, 4:7].tolist() == [0, 4, 1]
    assert scored[0].tolist() == [False] * 4 + [True, True, True, False]


@pytest.mark.parametrize("name", list(TASKS))
def test_every_scored_answer_follows_the_rule_for_random_batches(name):
    draws = np.random.default_rng(7).integers(0, 9, size=(50, 12))
    inputs, targets, scored = build(name, draws, 9)
    n = 6
    for b in range(50):
        src = [int(v) for v in draws[b, :n]]
        rule = {"copy": src, "reverse": src[::-1], "sort": sorted(src)}
        for t in range(12):
            if not scored[b, t]:
                continue
            if name in rule:
                assert targets[b, t] == rule[name][t - n]
            elif name == "previous-token":
                assert targets[b, t] == draws[b, t - 1]
            else:
                assert targets[b, t] == inputs[b, t + 1] == src[t + 1 - n]
            # the answer is never given away at its own position
            if name in rule:
                assert inputs[b, t] == 9


def test_each_task_has_a_one_line_explanation_and_a_sample():
    for name, task in TASKS.items():
        assert task.explanation and "\n" not in task.explanation
        shown_in, shown_out = sample(name, n=4, vocab=6, seed=1)
        assert len(shown_in) == len(shown_out) == 8
        assert set(shown_in) <= set(symbols(6))
        assert "->" in sample_text(name)


def test_reverse_sample_reads_back_to_front():
    shown_in, shown_out = sample("reverse", n=5, vocab=8, seed=3)
    assert [a for a in shown_out if a is not None] == shown_in[:5][::-1]


def test_bad_task_and_length_are_refused():
    with pytest.raises(ValueError, match="unknown task"):
        build("shuffle", DRAWS, VOCAB)
    with pytest.raises(ValueError, match="even"):
        build("copy", np.zeros((1, 5), int), VOCAB)
