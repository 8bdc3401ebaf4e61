"""Presentation mode on the screens a classroom has: 1024×768 up to 1920×1080.

Qt's offscreen platform takes a list of virtual screens from a JSON file; a
process of its own (the probe) opens the window on each and reports back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# one probe process for the module, about 10 s of CPU: the module runs first, on one worker
pytestmark = pytest.mark.slow
SCREENS = [(1024, 768), (1280, 720), (1280, 800), (1366, 768), (1920, 1080)]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def probed(tmp_path_factory) -> dict[tuple[int, int], dict]:
    x = 0
    screens = []
    for w, h in SCREENS:  # side by side, as a desk with five monitors
        screens.append({"name": f"s{w}x{h}", "x": x, "y": 0, "width": w, "height": h,
                        "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1})
        x += w
    config = tmp_path_factory.mktemp("screens") / "screens.json"
    config.write_text(json.dumps({"synchronousWindowSystemEvents": True,
                                  "windowFrameMargins": False, "screens": screens}))
    env = dict(os.environ, QT_QPA_PLATFORM=f"offscreen:configfile={config}", PYTHONPATH=str(ROOT),
               OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("presentation_probe.py"))],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return {tuple(r["screen"]): r for r in json.loads(done.stdout)}


@pytest.mark.parametrize("size", SCREENS, ids=[f"{w}x{h}" for w, h in SCREENS])
def test_the_window_and_every_stage_button_fit_the_screen(probed, size):
    r = probed[size]
    assert r["window_inside"] and r["window"][2:] == list(size), r
    assert r["buttons_inside"] and r["buttons_visible"], r
    assert r["normal_inside"], r  # the everyday window fits too
    assert r["restored"], r  # and leaving gives the window back where it was


@pytest.mark.parametrize("size", SCREENS, ids=[f"{w}x{h}" for w, h in SCREENS])
def test_type_scales_with_the_screen(probed, size):
    r = probed[size]
    # 20 pt on 1920×1080, in proportion below (1024×768: 14 pt), never under 11 pt
    floor = max(11.0, 20.0 * min(size[1] / 1080, size[0] / 1440)) - 0.6
    for key in ("body_pt", "diagram_pt", "axis_pt"):
        assert r[key] >= floor, (key, r)


def test_on_1920_by_1080_all_text_reaches_20_points_and_8_maps_110_pixels(probed):
    r = probed[(1920, 1080)]
    assert min(r["body_pt"], r["diagram_pt"], r["axis_pt"]) >= 20, r
    # the 8 small maps beside the chosen head's large one
    assert len(r["map_px"]) == 8 and min(r["map_px"]) >= 110, r


@pytest.mark.parametrize("size", SCREENS, ids=[f"{w}x{h}" for w, h in SCREENS])
def test_a_projector_reads_every_head_and_the_chosen_one_large(probed, size):
    r = probed[size]
    height = size[1]
    assert r["smallest_px"] >= 0.025 * height, r  # 2.5 % of the screen's height
    assert r["focus_visible"] and r["focus_px"][0] >= 0.4 * height, r
    assert r["maps_visible"] and not r["maps_scroll"], r  # all 8 heads, no scroll bar
    assert r["keys_named"] == list(r["words"]), r  # every column named, none skipped


SMALLER = [size for size in SCREENS if size[0] < 1600]


@pytest.mark.parametrize("size", SMALLER, ids=[f"{w}x{h}" for w, h in SMALLER])
def test_below_1600_the_small_maps_show_a_pattern_and_the_large_one_no_strip(probed, size):
    r = probed[size]
    # every small map at least 5 % of the screen's height on its short side (a 10×10
    # pattern, not a strip under two lines of words), the large map nearly square
    assert min(r["map_px"]) >= 0.05 * size[1], r
    height, width = r["focus_px"]
    assert width >= 0.7 * height, r
    # each head's bits on its map, or on hover where a line of them left a strip; all back after
    assert r["bits_readable"] and r["bits_back"], r


@pytest.mark.parametrize("size", SCREENS, ids=[f"{w}x{h}" for w, h in SCREENS])
def test_the_diagram_s_weights_grid_is_the_picture_s_star(probed, size):
    r = probed[size]
    # over a quarter of the screen's height, however large its words and chips
    assert r["grid_px"] >= 0.28 * size[1], r


@pytest.mark.parametrize("size", SCREENS, ids=[f"{w}x{h}" for w, h in SCREENS])
def test_the_chosen_head_s_large_map_is_nearly_square_on_every_screen(probed, size):
    r = probed[size]
    # a T×T softmax drawn as a tall strip reads as columns, not as a square of weights
    height, width = r["focus_px"]
    assert 0.7 * height <= width, r
