"""A saved run's rows agree with each other and with its settings, or it is refused.

Every evaluation records its curve point, its entropies and its head scores
together; a run.json whose ``scores`` (or ``entropy``) rows are at other steps than its
``curve`` was drawn against the wrong points, and raised in the window. The rows are
also bounded by the evaluations the settings make, so a crafted file cannot hand the
window millions of points to draw."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mha_explorer.core.lab import run_schema
from mha_explorer.core.lab.analysis import find_circuit
from mha_explorer.core.lab.files import RunFileError
from mha_explorer.core.lab.model import LabModelSpec
from mha_explorer.core.lab.service import run_summary
from mha_explorer.core.lab.store import load_meta, load_run, save_run
from mha_explorer.core.lab.train import TrainSettings, train


@pytest.fixture(scope="module")
def trained():
    spec = LabModelSpec(task="copy", vocab=5, n=3, d_model=8, heads=2)
    return train(spec, TrainSettings(steps=9, batch=4, eval_every=3, eval_size=8, seed=2))


@pytest.fixture
def saved(trained, tmp_path):
    folder = tmp_path / "run"
    save_run(trained, folder)
    return folder


def _edit(folder, change) -> None:
    meta = json.loads((folder / "run.json").read_text())
    change(meta)
    (folder / "run.json").write_text(json.dumps(meta))


def _refused(folder, word: str) -> str:
    with pytest.raises(RunFileError) as caught:
        load_run(folder)
    message = str(caught.value)
    assert len(message.splitlines()) == 1 and word in message, message
    return message


CHANGES = {
    "scores one row short": ("scores", lambda m: m["scores"].pop()),
    "scores at other steps": ("scores", lambda m: m["scores"][0].__setitem__(0, 2)),
    "entropy one row short": ("entropy", lambda m: m["entropy"].pop(0)),
    "curve one row short": ("curve", lambda m: m["curve"].pop()),
    "scores with an extra row": ("scores", lambda m: m["scores"].insert(0, [1, *m["scores"][0][1:]])),
}


@pytest.mark.parametrize("case", list(CHANGES))
def test_rows_at_other_steps_than_the_curve_are_refused(saved, case):
    key, change = CHANGES[case]
    _edit(saved, change)
    _refused(saved, key)


def test_more_rows_than_the_settings_evaluate_are_refused(saved):
    def extra(meta):  # rows at steps 1..9 where the settings evaluate at 3, 6 and 9 only
        for key in ("curve", "entropy", "scores"):
            template = meta[key][-1]
            meta[key] = [[step, *template[1:]] for step in range(1, 10)]
    _edit(saved, extra)
    assert "at most 3" in _refused(saved, "curve")


def test_millions_of_points_are_refused_before_they_are_drawn(saved):
    def huge(meta):
        meta["settings"].update(steps=10_000_000, eval_every=1)
        meta["curve"] = [[step, 1.0, 0.5] for step in range(1, run_schema.MAX_ROWS + 2)]
    _edit(saved, huge)
    assert f"at most {run_schema.MAX_ROWS:,}" in _refused(saved, "curve")


def test_a_run_the_app_saved_still_loads(saved, trained):
    meta = load_meta(saved)
    assert [r[0] for r in meta["curve"]] == [r[0] for r in meta["scores"]] == [3, 6, 9]
    assert load_run(saved)[0].curve == trained.curve


def test_a_task_that_is_not_text_is_refused(saved):
    _edit(saved, lambda m: m["spec"].__setitem__("task", ["copy"]))  # raised TypeError (unhashable)
    _refused(saved, "spec.task")


def test_a_pruning_order_with_a_head_twice_in_other_clothes_is_refused(saved):
    def order(meta):
        meta["extra"] = {"pruning": {"order": [-0.0, 0, 1], "accuracy": [1.0, 1.0, 1.0],
                                     "selection_accuracy": []}}
    _edit(saved, order)  # -0.0 was skipped as no head, so three entries passed for two heads
    _refused(saved, "pruning.order")


# any edit of a saved run: refused in one sentence, or loaded and summarised as the Lab shows it
_VALUES = st.sampled_from([None, True, 0, -1, 1, 3, 10**30, 1.5, -0.0, "x", "", [], {}, [1], "copy"])


@given(edits=st.lists(st.tuples(st.integers(0, 10**6), _VALUES, st.booleans()), min_size=1, max_size=3))
@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_edit_of_a_saved_run_is_refused_or_summarised(saved, trained, edits):
    original = (saved / "run.json").read_text()
    meta = json.loads(original)
    for where, value, delete in edits:
        places = list(_places(meta))
        parent, key = places[where % len(places)]
        if delete:
            del parent[key]
        else:
            parent[key] = value
    (saved / "run.json").write_text(json.dumps(meta))
    try:
        run, extra = load_run(saved)
    except RunFileError as exc:
        assert "\n" not in str(exc)
    else:
        summary = run_summary(run, None, None, find_circuit(run))
        assert len(summary["score_steps"]) in (0, len(summary["curve"]))
    finally:
        (saved / "run.json").write_text(original)


def _places(node):
    """(container, key) of every value inside ``node``."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield node, key
        yield from _places(value)
