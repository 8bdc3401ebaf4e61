"""A long sequence in the window computes what its maps draw: the query rows they show, each
exact over every key, labelled as such, with statistics said to be over those rows. A stage
after the softmax, which needs every row, says what that costs and computes it on request.

The controller's ``rows_after_s`` is the likely time past which every row is not computed at
once; the tests set it to 0 s so a small sequence, quick in CI, counts as long."""

from __future__ import annotations

import numpy as np
import pytest

from mha_explorer.core.config import MHAConfig
from mha_explorer.qt.heads.heads_panel import HeatmapPanel
from mha_explorer.qt.stage.stage_view import StageView

TRACE_TIMEOUT_MS = 60_000  # as tests/qt/conftest.py: torch may still be loading

# 1,024 rows: more than the 512 a map shows (d_model 16, 2 heads), so its maps pick rows
LONG = dict(d_model=16, n_heads=2, batch=2, seq=1024, device="cpu")


@pytest.fixture
def long_views(qtbot, make_controller):
    """The heads panel and the stage view on a long sequence counted as long (0 s)."""
    ctrl = make_controller(MHAConfig(**LONG), rows_after_s=0.0)
    panel, view = HeatmapPanel(ctrl), StageView(ctrl)
    for widget, size in ((panel, (900, 700)), (view, (1200, 800))):
        qtbot.addWidget(widget)
        widget.resize(*size)
        widget.show()
    return ctrl, panel, view


def test_a_long_sequence_draws_exact_picked_rows_and_says_which(long_views, settle, qtbot):
    ctrl, panel, view = long_views
    ctrl.set_stage("softmax")
    settle(ctrl)  # large maps: one per event-loop turn
    caption = panel.caption.text()
    assert "query rows 0, 2, 4, 6, …, 1,023 (512 of 1,024, spread evenly, each exact)" in caption
    assert all(item.image.shape == (512, 1024) for item in panel.image_items)
    # each drawn row is the exact row of the whole computation, not an average of rows
    from mha_explorer.core.engine import runner

    whole = runner.run(MHAConfig(**LONG), mode="full").tensors["softmax"]["weights"][0]
    for h, item in enumerate(panel.image_items):
        np.testing.assert_allclose(item.image, whole[h, list(ctrl.trace.row_ids)], rtol=1e-5,
                                   atol=1e-6)
    # the statistics under the title are said to be over those rows
    assert view.scaling.isVisible()
    qtbot.waitUntil(lambda: "Over query rows 0, 2, 4, 6, …, 1,023 (512 of 1,024" in view.scaling.text())
    assert not panel.every_row.isVisible() and not view.every_row.isVisible()  # up to softmax
    # on a projector the large map's axis words say so too (the caption gives way there)
    panel.set_presenting(True)
    assert panel.axis_words.text().startswith("rows: 512 of 1,024 queries, spread evenly, each exact")


def test_a_stage_after_the_softmax_says_its_cost_and_computes_every_row(long_views, qtbot):
    ctrl, panel, view = long_views
    ctrl.set_stage("weighted_sum")
    assert panel.cells == []  # the picked rows hold no context: nothing pretends otherwise
    assert not panel.caption.isVisible()  # the line below says why, once
    for bar in (panel.every_row, view.every_row):
        assert bar.isVisible() and bar.button.isEnabled()
        words = bar.label.text()
        assert "needs all 1,024 query rows" in words and "only the 512 the maps show" in words
        assert "FLOPs" in words and "on this machine" in words  # the measured likely time
    def says_every_row(words: str) -> bool:
        return words.startswith("computing every one of the 1,024 query rows") and "machine" in words

    with (qtbot.waitSignal(ctrl.trace_ready, timeout=TRACE_TIMEOUT_MS),
          qtbot.waitSignal(ctrl.status_changed, check_params_cb=says_every_row,
                           timeout=TRACE_TIMEOUT_MS)):  # the status line says what runs
        view.every_row.button.click()
        # pressed once, in either view: the run is on its way
        assert not view.every_row.button.isEnabled() and not panel.every_row.button.isEnabled()
    assert ctrl.trace.row_ids is None  # every row, and so the context of every row
    assert len(panel.cells) == 2 and panel.image_items[0].image.shape == (1024, 8)
    assert panel.caption.isVisible() and "1,024 × 8" in panel.caption.text()
    assert not panel.every_row.isVisible() and not view.every_row.isVisible()
    # the next edit is judged by its own likely time again: picked rows
    def says_rows(words: str) -> bool:
        return words == "computing the 512 query rows the maps show, of 1,024…"

    with (qtbot.waitSignal(ctrl.trace_ready, timeout=TRACE_TIMEOUT_MS),
          qtbot.waitSignal(ctrl.status_changed, check_params_cb=says_rows, timeout=TRACE_TIMEOUT_MS)):
        ctrl.update(batch=1)
    assert ctrl.trace.row_ids is not None and panel.every_row.isVisible()


def test_a_short_sequence_and_a_family_computed_whole_keep_every_row(make_controller):
    short = make_controller(MHAConfig(d_model=16, n_heads=2, batch=2, seq=64, device="cpu"),
                            rows_after_s=0.0)
    assert short.trace.row_ids is None and short.trace.mode == "full"
    latent = dict(LONG, d_model=64, n_heads=4, mla=True, kv_lora_rank=16, q_lora_rank=24,
                  qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=12, positions="rope")
    mla = make_controller(MHAConfig(**latent), rows_after_s=0.0)
    assert mla.trace.row_ids is None and mla.trace.output is not None


def test_cancelling_every_row_keeps_the_picked_rows_and_the_offer(long_views, qtbot):
    ctrl, panel, _view = long_views
    ctrl.set_stage("merge")
    picked = ctrl.trace
    panel.every_row.button.click()
    ctrl.cancel()  # as the status bar's Cancel does: the run's answer, if it comes, is dropped
    assert ctrl.trace is picked and panel.every_row.isVisible()
    assert panel.every_row.button.isEnabled() and panel.every_row.button.text() == "Compute every row"
    # later runs compute the picked rows again, not every row
    with qtbot.waitSignal(ctrl.trace_ready, timeout=TRACE_TIMEOUT_MS):
        ctrl.set_batch_index(1)
    assert ctrl.trace.row_ids is not None and ctrl.trace.batch_index == 1
