"""The induction task teaches what Olsson et al. found, at a size that trains in
seconds: one attention layer cannot find what followed an earlier occurrence, two
layers can, and the last layer's prefix matching rises with the accuracy; removing
the heads that match prefixes takes the accuracy back down."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mha_explorer.core.lab.analysis import find_circuit
from mha_explorer.core.lab.circuits import probe_batch, scores_from_maps
from mha_explorer.core.lab.lesson import best_per_step, phase_change
from mha_explorer.core.lab.model import LabModelSpec

# the pair is trained once per run (tests/conftest.py) and shared with the Lab page's tests
pytestmark = pytest.mark.xdist_group("induction")


@pytest.fixture
def one_layer(induction_pair):
    return induction_pair[1]


@pytest.fixture
def two_layers(induction_pair):
    return induction_pair[2]


def test_one_attention_layer_stays_low(one_layer):
    assert one_layer.final_accuracy <= 0.6
    assert one_layer.prefix_matching()[-1][1] < 0.5  # no head found the symbol after the earlier one


def test_two_layers_learn_it_and_prefix_matching_rises_with_the_accuracy(two_layers):
    assert two_layers.final_accuracy >= 0.9
    points = two_layers.prefix_matching()
    assert [s for s, _ in points] == [s for s, _l, _a in two_layers.curve]
    prefix = np.array([p for _s, p in points])
    accuracy = np.array([a for _s, _l, a in two_layers.curve])
    assert prefix[-1] >= 0.6 and prefix[0] < 0.3
    assert np.corrcoef(prefix, accuracy)[0, 1] > 0.9  # they rise together


def test_the_phase_change_is_where_the_loss_falls(two_layers):
    steps = np.array([s for s, _l, _a in two_layers.curve])
    loss = np.array([lo for _s, lo, _a in two_layers.curve])
    prefix = best_per_step(np.array([p for _s, p, _q in two_layers.scores]), 2, -1)
    change = phase_change(steps, loss, prefix)
    assert change is not None and change["from_step"] <= change["step"] <= change["to_step"]
    # most of the loss the model ever sheds goes in that window
    assert change["loss_from"] - change["loss_to"] > 0.5 * (loss[0] - loss[-1])


def test_removing_the_induction_heads_takes_the_accuracy_back_down(two_layers):
    c = find_circuit(two_layers)
    assert c.formed and c.induction_head >= 2  # a second-layer head
    assert c.accuracy >= 0.9 and c.accuracy_without < 0.5
    assert c.previous_head in (0, 1) and len(c.reads) == 2
    # the first-layer head it reads is the one whose removal costs it most
    assert c.reads[c.previous_head] == min(c.reads) < c.induction_score


def test_the_scores_measure_what_they_say():
    """Hand-made maps: a head that looks one back, and one that looks at the symbol after
    the earlier occurrence in a repeated probe."""
    n, T = 4, 8
    previous = torch.zeros(1, 1, T, T)
    previous[0, 0, 0, 0] = 1
    for i in range(1, T):
        previous[0, 0, i, i - 1] = 1
    induction = torch.zeros(1, 1, T, T)
    for i in range(T):
        induction[0, 0, i, i - n + 1 if i >= n else 0] = 1
    prefix, prev = scores_from_maps([torch.cat([previous, induction], dim=1)], n)
    # (the induction-like head's row 1 looks at key 0, which is one back: 1 of 7 rows)
    assert prefix == pytest.approx([0.0, 1.0]) and prev == pytest.approx([1.0, 1 / 7])


def test_the_probe_repeats_distinct_symbols():
    probe = probe_batch(LabModelSpec(task="induction", vocab=24, n=10, d_model=32, heads=2), seed=0)
    first, second = probe[:, :10], probe[:, 10:]
    assert torch.equal(first, second)
    assert all(len(set(row.tolist())) == 10 for row in first)
