"""What the maps say about themselves holds for what they draw: the axis words name the rows
and columns of the tensor shown (keys only where the columns are keys), a signed map's colour
scale is not set by a few outliers, and the diagram colours a weight as the colour bar reads it."""

from __future__ import annotations

import numpy as np
import pytest

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.display.diagram import weights_positions
from mha_explorer.core.display.head_maps import build_stage_maps
from mha_explorer.core.display.variant_maps import offers_tensor_choice, stage_maps
from mha_explorer.core.engine import runner
from mha_explorer.core.stages.catalog import STAGE_IDS

# every size apart (T 5, S 7, d_k 24, Hkv·d_k 48, D 96), so a word can be held to a count
CROSS = MHAConfig(d_model=96, n_heads=4, n_kv_heads=2, batch=1, seq=5, kv_seq=7, device="cpu")
MLA = MHAConfig(d_model=64, n_heads=4, batch=1, seq=6, mla=True, kv_lora_rank=16, q_lora_rank=24,
                qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=12, positions="rope", device="cpu")


@pytest.fixture(scope="module")
def cross_trace():
    return runner.run(CROSS)


def expected_columns(cfg: MHAConfig, width: int) -> str:
    """The words a map ``width`` columns wide must use, from the config's own dims."""
    if width == cfg.S:
        return "keys"
    if width == cfg.d_k:
        return f"dims of one head (d_k = {cfg.d_k})"
    if width == cfg.d_model:
        return f"features (D = {cfg.d_model})"
    assert width == cfg.Hkv * cfg.d_k, width
    return f"features (Hkv·d_k = {cfg.Hkv * cfg.d_k})"


def classic_views():
    for stage in STAGE_IDS:
        for tensor in ("Q", "K", "V") if offers_tensor_choice(stage) else ("Q",):
            yield stage, tensor


@pytest.mark.parametrize("stage,tensor", list(classic_views()))
def test_the_axis_words_name_the_rows_and_columns_of_the_tensor_drawn(cross_trace, stage, tensor):
    maps = stage_maps(cross_trace, stage, 0, tensor)
    rows, columns = maps.axes.lines()
    height, width = maps.maps[0].image.shape
    assert columns == f"columns: {expected_columns(CROSS, width)} →", (stage, tensor)
    # a map of T rows is the queries' (the input's plain tokens); of S rows, the keys'
    assert rows in ({"rows: keys ↓"} if height == CROSS.S else {"rows: queries ↓", "rows: tokens ↓"})
    assert ("keys" in columns) == (width == CROSS.S and stage in ("scores", "softmax"))


def test_heads_wider_than_d_model_over_h_are_named_as_they_are():
    # Gemma's way: 4 heads of 32 on D = 64, so Q and the merged heads are 128 wide, not D
    cfg = MHAConfig(d_model=64, n_heads=4, head_dim=32, batch=1, seq=5, device="cpu")
    trace = runner.run(cfg)
    for stage in ("project", "merge"):
        maps = build_stage_maps(trace, stage, 0, "Q")
        assert maps.maps[0].image.shape[1] == 4 * 32
        assert maps.axes.column_words == "features (H·d_k = 128)", stage
        assert len(maps.column_lines) == 3  # a dashed line between every two of the 4 heads
        assert "× 128)" in maps.caption
    assert build_stage_maps(trace, "output", 0).axes.column_words == "features (D = 64)"


def test_latent_attentions_own_steps_say_features_or_a_heads_dims():
    trace = runner.run(MLA)
    for stage in ("q_project", "kv_compress", "kv_expand", "heads"):
        maps = stage_maps(trace, stage, 0)
        per_head = [a.ndim == 4 for a in trace.tensors[stage].values()]
        words = maps.axes.column_words
        if stage == "heads":
            assert all(per_head) and words.startswith("dims of one head"), (stage, words)
        else:
            assert not any(per_head) and words.startswith("features"), (stage, words)


def test_a_few_outlier_dims_do_not_set_the_colour_scale(cross_trace):
    x = cross_trace.tensors["input"]["X"]
    saved = x.copy()
    try:
        x[0, :, 3] = 1000.0  # one dimension far past the rest, as in a trained residual stream
        maps = build_stage_maps(cross_trace, "input", 0)
        # the other values use the colours: the median's a tenth of the way to the end colour
        # (it was a thousandth, the map one flat colour), only the outlier dim past the end
        assert np.median(np.abs(x[0])) == pytest.approx(0.1 * maps.levels[1], rel=1e-5)
        assert maps.levels[0] == -maps.levels[1]
        past = np.abs(x[0]) > maps.levels[1]
        assert past[:, 3].all() and past.mean() < 0.02
        assert "clipped at" in maps.caption and "1e+03" in maps.caption  # the largest, said
        assert maps.clipped and "clipped" in maps.bar_title
    finally:
        x[...] = saved


def test_without_outliers_the_colours_reach_the_largest_value(cross_trace):
    for stage in ("input", "scores", "weighted_sum", "output"):
        maps = build_stage_maps(cross_trace, stage, 0)
        peak = max(float(np.nanmax(np.abs(m.image))) for m in maps.maps)
        assert maps.levels == pytest.approx((-peak, peak), rel=1e-6), stage
        assert not maps.clipped and "clipped" not in maps.caption and maps.bar_title == maps.value_name


def test_the_diagram_colours_a_weight_as_the_colour_bar_reads_it():
    head = np.array([[0.45, 0.30, 0.25], [0.10, 0.10, 0.80]], dtype=np.float32)
    # the heads panel's bar runs 0 to 1: a 0.45 is drawn 45 % of the way, wherever it is
    np.testing.assert_allclose(weights_positions(head[:1]), head[:1])
    np.testing.assert_allclose(weights_positions(head), head)
