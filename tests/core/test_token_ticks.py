"""Thinning token names: every k-th one, the last always, none closer than k."""

from __future__ import annotations

import math

from mha_explorer.core.display.token_ticks import elide, label_step, nice_step, spaced_positions


def test_the_step_leaves_each_label_its_room():
    for count in (1, 2, 6, 10, 64, 513, 65536):
        for label_px in (8.0, 17.0, 33.5):
            for length_px in (40.0, 200.0, 1000.0):
                step = label_step(count, label_px, length_px)
                assert step >= 1
                # shown labels sit step pixels-per-position apart: at least one label each
                assert step * length_px / count >= label_px or step == 1 and count * label_px <= length_px
                if step > 1:  # and no larger than needed
                    assert (step - 1) * length_px / count < label_px


def test_positions_keep_both_ends_and_never_crowd():
    for count in range(1, 200):
        for step in (1, 2, 3, 5, 7, 64):
            shown = spaced_positions(count, step)
            assert shown[0] == 0
            assert shown[-1] == count - 1 or count - 1 < step  # the ends fit apart: both shown
            assert all(b - a >= step for a, b in zip(shown, shown[1:], strict=False))
            assert len(shown) <= math.ceil(count / step) + 1


def test_nice_steps_and_elision():
    assert [nice_step(s) for s in (1, 2, 3, 6, 11, 99)] == [1, 2, 5, 10, 20, 100]
    assert elide("tired") == "tired"
    assert elide("<h1>BIG</h1>") == "<h1>BIG</h1>"  # twelve characters fit
    cut = elide("supercalifragilistic")
    assert len(cut) == 12 and cut.endswith("…") and "supercalifragilistic".startswith(cut[:-1])
