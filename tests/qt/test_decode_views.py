"""The decode and tiles views: fed numpy and dicts, stepped like the stages."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest
from waits import UI_MS

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.engine.decode import layer_tensors, run_decode
from mha_explorer.core.engine.tiled import record_tiles
from mha_explorer.core.plan.decode import cache_growth, decode_steps
from mha_explorer.core.plan.tiles import tile_plan, tile_states
from mha_explorer.core.variants.grouped.compute import project_heads
from mha_explorer.qt.decode.decode_view import DecodeView
from mha_explorer.qt.decode.tiles_view import TilesView

VIEWS = Path(__file__).resolve().parents[2] / "mha_explorer" / "qt" / "decode"


def test_the_views_never_import_torch():
    for path in VIEWS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "torch" or n.endswith((".tiled", ".decode_engine"))
                           for n in names), path.name


@pytest.fixture
def decode_view(qtbot):
    cfg = MHAConfig(d_model=32, n_heads=4, n_kv_heads=2, batch=1, window=6)
    steps = decode_steps(cfg, 3, 6, layers=4)
    run = run_decode(cfg, 3, 6)
    view = DecodeView()
    qtbot.addWidget(view)
    view.resize(800, 500)
    view.set_data([s.to_dict() for s in steps], scores=[r.scores for r in run.steps],
                  weights=[r.weights for r in run.steps],
                  growth=cache_growth(cfg, [s.seen_tokens for s in steps]), layers=4)
    return view, steps, run


def test_decode_view_steps_forward_and_back(qtbot, decode_view):
    view, steps, _ = decode_view
    assert view.step_count == 7 and view.step() == 0
    assert not view.previous_step()
    with qtbot.waitSignal(view.step_changed, timeout=UI_MS) as signal:
        assert view.next_step()
    assert signal.args == [1]
    view.set_step(99)
    assert view.step() == 6 and not view.next_step()
    # the last step: 9 tokens seen, a window of 6 keeps 6, each K/V head 8 wide
    assert "[1, 2, 6, 8]" in view.summary()
    assert "oldest 3 tokens have left the window" in view.summary()
    assert view.previous_step() and view.step() == 5


def test_decode_view_shows_the_chosen_heads_score_row(decode_view):
    view, _, run = decode_view
    view.set_step(4)
    view.set_head(3)
    scores, weights = view.score_row()
    np.testing.assert_array_equal(scores, run.steps[4].scores[3, -1])
    assert weights.sum() == pytest.approx(1.0, abs=1e-6)


def test_decode_view_draws_the_cache_growing(decode_view):
    view, _, _ = decode_view
    first = view.grab().toImage()
    view.next_step()
    assert view.grab().toImage() != first


@pytest.fixture
def tiles_view(qtbot):
    cfg = MHAConfig(d_model=16, n_heads=2, batch=1, seq=10, kv_seq=13, causal=True)
    w, x, xkv = layer_tensors(cfg)
    q, k, v = (t.detach() for t in project_heads(cfg, w, x, xkv))
    _, records = record_tiles(q, k, v, cfg.mask_spec, (4, 5), head=1)
    view = TilesView()
    qtbot.addWidget(view)
    view.resize(800, 500)
    view.set_data(tile_states(cfg.mask_spec, 10, 13, (4, 5)), tile_plan(cfg, (4, 5)).to_dict(),
                  [dataclasses.asdict(r) for r in records])
    return view, records


def test_tiles_view_walks_the_tiles_in_the_loops_order(qtbot, tiles_view):
    view, records = tiles_view
    assert view.tile_count == 3 * 3
    seen = [view.current_tile()]
    while view.next_tile():
        seen.append(view.current_tile())
    assert seen == [(r.row_block, r.col_block) for r in records]
    view.set_tile(0)
    assert not view.previous_tile()
    # top-left causal, key blocks 0-4, 5-9, 10-12: row i sees keys 0..i, so rows 0-3 reach
    # block 0 only, rows 4-7 and rows 8-9 blocks 0 and 1
    assert "5 of 9 tiles computed, 4 skipped" in view.summary()


def test_tiles_view_without_records_steps_row_by_row(qtbot):
    view = TilesView()
    qtbot.addWidget(view)
    cfg = MHAConfig(d_model=16, n_heads=2, batch=1, seq=8, causal=True)
    view.set_data(tile_states(cfg.mask_spec, 8, 8, (4, 4)), tile_plan(cfg, (4, 4)).to_dict())
    assert view.current_record() is None
    view.next_tile()
    assert view.current_tile() == (0, 1) and "skipped" in view.summary()
    view.grab()  # paints without m, l or output


def test_tiles_view_redraws_as_the_current_tile_moves(tiles_view):
    view, _ = tiles_view
    first = view.grab().toImage()
    view.next_tile()
    assert view.grab().toImage() != first
