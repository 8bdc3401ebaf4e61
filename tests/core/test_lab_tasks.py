"""Each generated task asks what its explanation says; checked against answers
written out by hand and against plain-Python rules."""

import numpy as np
import pytest

from mha_explorer.core.lab.tasks import LAYOUT_DRAWS, TASKS, build, sample, sample_text, symbols

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


def _layout(B: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1 << 30, size=(B, LAYOUT_DRAWS))


def test_induction_repeats_a_run_and_asks_for_the_symbol_after_its_earlier_occurrence():
    draws = np.array([[3, 0, 4, 1, 2, 7, 6, 5]])
    # L = 3 + 0 % 2 = 3, a = 1 % 3 = 1, b = a + L + 0 % (8 - 3 - 4 + 1) = 4: "0 4 1" again at 4
    inputs, targets, scored = build("induction", draws, 8, np.array([[0, 1, 0]]))
    assert inputs[0].tolist() == [3, 0, 4, 1, 0, 4, 1, 5]
    # at 4 (a 0, seen once before at 1, followed by 4) the answer is 4; at 5 it is 1; the
    # repeat's last symbol (6) is not asked: what follows it was never seen
    assert targets[0, 4:6].tolist() == [4, 1]
    assert scored[0].tolist() == [False] * 4 + [True, True, False, False]


def test_induction_places_its_repeat_anywhere_so_no_position_gives_the_answer():
    draws = np.random.default_rng(3).integers(0, 24, size=(2000, 24))
    inputs, _targets, scored = build("induction", draws, 24, _layout(2000))
    # the distance back to the earlier occurrence is not one number: position alone
    # cannot say where to look
    distances = set()
    for b in range(200):
        for i in np.flatnonzero(scored[b]):
            distances.add(i - int(np.flatnonzero(inputs[b, :i] == inputs[b, i])[0]))
    assert len(distances) > 8
    # every position of the second half is asked in some sequences and not in others
    share = scored.mean(0)
    assert ((share > 0) & (share < 0.6)).sum() >= 12
    assert scored.sum(1).mean() > 2  # enough scored answers per sequence to learn from


def test_induction_needs_its_layout():
    with pytest.raises(ValueError, match="layout"):
        build("induction", DRAWS, VOCAB)


def test_add_sums_two_places_modulo_the_vocabulary():
    inputs, targets, scored = build("add", DRAWS, VOCAB)
    assert inputs[0, 4:].tolist() == [BLANK] * 4
    # slot i: symbol i + symbol i + 2, wrapping round (3+4, 0+1, 4+3, 1+0), modulo 5
    assert targets[0, 4:].tolist() == [2, 1, 2, 1]
    assert scored[0, 4:].all()


def test_subtract_takes_the_later_place_from_the_earlier_one():
    inputs, targets, scored = build("subtract", DRAWS, VOCAB)
    assert inputs[0, 4:].tolist() == [BLANK] * 4
    # slot i: symbol i - symbol i + 2, wrapping round (3-4, 0-1, 4-3, 1-0), modulo 5:
    # unlike add, swapping the two places changes the answer
    assert targets[0, 4:].tolist() == [4, 4, 1, 1]
    assert scored[0, 4:].all()


@pytest.mark.parametrize("name", list(TASKS))
def test_every_scored_answer_follows_the_rule_for_random_batches(name):
    draws = np.random.default_rng(7).integers(0, 9, size=(50, 12))
    inputs, targets, scored = build(name, draws, 9, _layout(50, 7) if TASKS[name].layout else None)
    n = 6
    for b in range(50):
        src = [int(v) for v in draws[b, :n]]
        rule = {"copy": src, "reverse": src[::-1], "sort": sorted(src),
                "add": [(src[i] + src[(i + n // 2) % n]) % 9 for i in range(n)],
                "subtract": [(src[i] - src[(i + n // 2) % n]) % 9 for i in range(n)]}
        for t in range(12):
            if not scored[b, t]:
                continue
            if name in rule:
                assert targets[b, t] == rule[name][t - n]
            elif name == "previous-token":
                assert targets[b, t] == draws[b, t - 1]
            else:  # the symbol after the one earlier occurrence of this position's symbol
                earlier = np.flatnonzero(inputs[b, :t] == inputs[b, t])
                assert len(earlier) == 1
                assert targets[b, t] == inputs[b, t + 1] == inputs[b, earlier[0] + 1]
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
