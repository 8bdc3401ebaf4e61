"""Every picture a class sees, checked as a class would see it: no text on another text or on a
tensor, nothing cut by its view's edge, type no smaller than the mode's least (presentation:
2.5 % of the screen's height), every text at least 4.5:1 on what is behind it, no tensor drawn
smaller than its own label, axis words true to their map.

The walk (qt/gallery) runs in a process of its own (picture_probe.py): the offscreen platform's
screens, every classroom screen side by side and a 2× high-DPI one, are set before Qt starts.
CI walks a fixed sample: every stage of every setup (families, masks, positions, MiniLM, Gemma 3
and a Lab run), each setup in both modes, the screens and themes in turn. The whole matrix
runs by hand: ``MHA_PICTURES=full python -m pytest tests/qt/test_pictures.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from mha_explorer.core.plan.build import build_plan
from mha_explorer.qt.gallery.matrix import MODES, SCREENS, SETUPS, THEMES

FULL = os.environ.get("MHA_PICTURES", "") == "full"
ROOT = Path(__file__).resolve().parents[2]
# the stage in the middle of the window (its diagram, its RoPE plot, its header) and the row
# of stage buttons over it
STAGE = ("stage view", "Stages")
# the rest of the window, as its docks are titled
PANELS = ("Heads", "Configuration", "Shapes", "Parameters & memory", "Weights", "Layers",
          "Generation", "Lab", "status bar", "window")


@pytest.fixture(scope="module")
def walked() -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    env.pop("QT_QPA_PLATFORM", None)  # the probe sets its own screens
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("picture_probe.py")),
                           "full" if FULL else "sample"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=6 * 3600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    print(f"\n{len(result['pictures'])} pictures in {result['seconds']:.0f} s", file=sys.stderr)
    return result


def _areas(fault: dict) -> set[str]:
    """The parts of the window a fault's texts are in ('Heads: label ...' -> 'Heads')."""
    return {owner.split(":")[0].strip() for owner in fault["where"].split(", ") if ":" in owner}


def _found(walked: dict, kinds: tuple[str, ...], areas: tuple[str, ...]) -> list[str]:
    return [f"{p['picture']}: {f['kind']}: {' | '.join(f['texts'])} ({f['where']}; {f['detail']})"
            for p in walked["pictures"] for f in p["faults"]
            if f["kind"] in kinds and _areas(f) & set(areas)]


def test_the_walk_meets_every_stage_of_every_setup_in_both_modes(walked):
    assert walked["skipped"] == []  # every model and the Lab run were there to walk
    seen: dict[str, set] = defaultdict(set)
    for p in walked["pictures"]:
        seen[p["setup"]].add((p["stage"], p["mode"]))
    for setup in SETUPS:
        config = setup.make(None)
        stages = {s for s, _m in seen[setup.name]}
        assert stages, setup.name
        if config is not None:  # the Lab run's config is made by the probe's own run
            assert stages == set(build_plan(config).stage_ids), setup.name
        assert {m for _s, m in seen[setup.name]} == set(MODES), setup.name
    assert {p["screen"] for p in walked["pictures"]} == {s.name for s in SCREENS}
    assert {p["theme"] for p in walked["pictures"]} == set(THEMES)


def test_no_text_of_the_stage_lies_on_a_text_or_a_tensor(walked):
    found = _found(walked, ("text on text", "run together", "text on a tensor"), STAGE)
    assert not found, "\n".join(found[:40])


def test_no_text_of_the_stage_is_cut_by_its_view(walked):
    found = _found(walked, ("cut",), STAGE)
    assert not found, "\n".join(found[:40])


def test_the_stage_s_type_is_as_large_as_the_mode_asks(walked):
    found = _found(walked, ("small",), STAGE)
    assert not found, "\n".join(found[:40])


def test_every_text_of_the_stage_stands_out_from_its_ground(walked):
    found = _found(walked, ("contrast",), STAGE)
    assert not found, "\n".join(found[:40])


def test_no_tensor_is_drawn_smaller_than_its_label(walked):
    found = _found(walked, ("icon", "axis words"), STAGE)
    assert not found, "\n".join(found[:40])


@pytest.mark.parametrize("area", PANELS)
def test_the_panels_around_the_stage_pass_the_same_checks(walked, area):
    found = _found(walked, ("text on text", "run together", "text on a tensor", "cut", "small",
                            "contrast", "icon", "axis words"), (area,))
    assert not found, "\n".join(found[:40])
