"""Gemma 3 270M's cached generation as a caller drives it: steps announced as they are
made, Cancel between steps, the end of text, and bad requests refused in one line.
(Its tokens and rows against transformers and the full pass: test_gemma3_model.py.)"""

from __future__ import annotations

import pytest

from mha_explorer.core.models.gemma3 import files

AVAILABLE, WHY = files.is_available()
pytestmark = [pytest.mark.skipif(not AVAILABLE, reason=WHY), pytest.mark.xdist_group("trained-models")]
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def ours():
    from mha_explorer.core.models.gemma3.model import load_model

    return load_model()


def test_each_step_is_announced_as_it_is_made(ours):
    from mha_explorer.core.models.gemma3.generate import generate

    seen = []
    made = generate(ours, ours.encode("Once upon a time")[0], 4, attention=6, on_step=seen.append)
    assert [s.step for s in seen] == [1, 2, 3, 4] and tuple(seen) == made.steps
    assert made.steps[1].input_token_id == made.steps[0].token_id  # each step feeds the last token made
    assert all(set(s.attention) == {6} for s in made.steps)
    assert all(s.seconds > 0 for s in made.steps) and made.prefill_seconds >= 0


def test_cancel_stops_between_steps(ours):
    from mha_explorer.core.models.gemma3.generate import generate
    from mha_explorer.core.models.progress import Cancelled

    seen = []
    with pytest.raises(Cancelled):
        generate(ours, ours.encode("Counting: one, two,")[0], 20, on_step=seen.append,
                 cancel=lambda: len(seen) >= 2)
    assert len(seen) == 2


def test_the_end_of_text_token_ends_generation(ours, monkeypatch):
    from mha_explorer.core.models.gemma3 import generate as gen

    prompt = ours.encode("The end")[0]
    first = gen.generate(ours, prompt, 1).steps[0].token_id
    monkeypatch.setattr(gen, "EOS_ID", first)  # as if the model had ended the text there
    made = gen.generate(ours, prompt, 5)
    assert made.stopped == "eos" and len(made.steps) == 1
    assert gen.generate(ours, prompt, 2, stop_at_eos=False).stopped == "steps"


def test_a_prompt_of_only_bos_is_continued(ours):
    from mha_explorer.core.models.gemma3.generate import generate

    made = generate(ours, [2], 2)
    assert made.steps[0].position == 0 and made.steps[0].cache_tokens[0] == 1
    assert len(made.token_ids) == 3


@pytest.mark.parametrize("prompt, steps, message", [
    ([], 3, "no tokens"), ([2, 5], 0, "from 1 to"), ([2, 5], True, "whole number"),
    ([2, 262_144], 3, "0..262143"),
])
def test_bad_requests_are_refused_in_one_line(ours, prompt, steps, message):
    from mha_explorer.core.models.gemma3.generate import generate

    with pytest.raises(ValueError, match=message):
        generate(ours, prompt, steps)
    with pytest.raises(ValueError, match="layers 1 to 18"):
        generate(ours, [2, 5], 1, attention=19)
