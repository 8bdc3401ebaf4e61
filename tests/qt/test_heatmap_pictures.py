"""What the heatmaps draw, as a class sees it: the axis words true for each map, every word
large enough in presentation, none on another or on a map, every one readable on what is
behind it in both themes, the colour bar matching the colours drawn. The views list their
own words (qt/picture.py); the pixels of a grab check the grounds they name."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QCoreApplication, QEvent
from waits import UI_MS

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.display.colors import contrast_ratio
from mha_explorer.core.display.variant_maps import offers_tensor_choice
from mha_explorer.core.stages.catalog import ATTENTION_STAGES, STAGE_IDS
from tests.qt.drawn_checks import CONTRAST, assert_nothing_collides, drawn, ground_in, ink_contrast

# every size apart (T 5, S 7, d_k 24, Hkv·d_k 48, D 96): a word can be held to a count
CROSS = MHAConfig(d_model=96, n_heads=4, n_kv_heads=2, batch=1, seq=5, kv_seq=7, device="cpu")
SCREEN_H = 1080  # tests/qt/conftest.py's offscreen screen, where presentation goes


def classic_views():
    for stage in STAGE_IDS:
        for tensor in ("Q", "K", "V") if offers_tensor_choice(stage) else ("Q",):
            yield stage, tensor


@pytest.fixture
def window(make_window, settle):
    window = make_window(CROSS)
    window.heatmaps  # noqa: B018 - built with the first trace
    settle(window.controller)
    return window


def show_stage(window, settle, stage: str, tensor: str = "Q") -> None:
    window.controller.set_stage(stage)
    if offers_tensor_choice(stage):
        window.heatmaps.tensor_combo.setCurrentText(tensor)
    settle(window.controller)
    # the grid's new rows are placed by a layout request Qt has posted: before any paint
    QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)


# the axis words -----------------------------------------------------------------------------
@pytest.mark.parametrize("presenting", [False, True], ids=["normal", "presentation"])
def test_the_axis_words_over_every_map_say_what_its_rows_and_columns_are(window, settle, presenting):
    window.set_presentation(presenting)
    panel = window.heatmaps
    for stage, tensor in classic_views():
        show_stage(window, settle, stage, tensor)
        words = {t.role: t.text for t in drawn(panel)[0] if t.role in ("rows", "columns")}
        assert set(words) == {"rows", "columns"}, (stage, tensor)
        height, width = panel.image_items[0].image.shape
        keys = width == CROSS.S and stage in ATTENTION_STAGES
        # keys only where the columns are the keys; otherwise the count the columns are
        assert ("keys" in words["columns"]) == keys, (stage, tensor, words)
        if not keys:
            assert f"= {width}" in words["columns"] and "features" in words["columns"] or \
                "dims of one head" in words["columns"], (stage, tensor, words)
        # S rows are the keys' (K and V), T rows the queries' or the input's tokens
        assert ("keys" in words["rows"]) == (height == CROSS.S), (stage, tensor, words)


# sizes, collisions, contrast ---------------------------------------------------------------------
SHOWN = ("input", "project", "view", "scores", "softmax", "merge")


def test_every_heatmap_text_grows_with_presentation(window, settle):
    window.set_presentation(True)
    least = 0.025 * SCREEN_H  # presentation's smallest type: 2.5 % of the screen's height
    for stage in SHOWN:
        show_stage(window, settle, stage)
        texts = drawn(window.heatmaps)[0]
        owners = {t.owner for t in texts}
        assert "colour bar" in owners and "heads: axes" in owners, owners
        assert any(t.role == "bar" for t in texts), stage  # the colour bar's title too
        for t in texts:
            assert t.pixel_size >= least, (stage, t.text, t.owner, t.pixel_size)
            assert min(t.rect.width(), t.rect.height()) >= 0.6 * least, (stage, t.text, t.rect)


@pytest.mark.parametrize("presenting", [False, True], ids=["normal", "presentation"])
def test_no_heatmap_text_sits_on_another_on_a_map_or_past_its_view(window, settle, presenting):
    window.set_presentation(presenting)
    for stage in SHOWN:
        show_stage(window, settle, stage)
        texts, shapes = drawn(window.heatmaps)
        assert texts and shapes, stage
        assert_nothing_collides(texts, shapes)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_heatmap_text_reads_on_its_ground_in_both_themes(window, settle, theme):
    window.set_theme(theme)
    for stage in ("input", "softmax"):
        show_stage(window, settle, stage)
        image = window.grab().toImage()
        texts = drawn(window.heatmaps)[0]
        assert {"colour bar", "heads: axes"} <= {t.owner for t in texts}, stage
        for t in texts:
            assert contrast_ratio(t.ink.name(), t.ground.name()) >= CONTRAST, (t.text, t.owner)
            # the ground named is the ground drawn, and the ink on it reads
            assert ground_in(image, t.rect).name() == t.ground.name(), (t.text, t.owner)
            assert ink_contrast(image, t.rect) >= CONTRAST, (t.text, t.owner)


# the colour bar and the colours drawn ------------------------------------------------------------
def test_the_colour_bar_runs_over_the_levels_every_map_is_drawn_with(window, settle):
    x = window.controller.trace.tensors["input"]["X"]
    x[0, :, 5] = 500.0  # one outlier dimension, as a trained residual stream has
    for stage in SHOWN:
        show_stage(window, settle, stage)
        bar = window.heatmaps.color_bar.levels()
        for item in window.heatmaps.image_items:
            np.testing.assert_allclose(item.getLevels(), bar)
    show_stage(window, settle, "input")
    title = [t.text for t in drawn(window.heatmaps)[0] if t.role == "bar"]
    assert title == ["X (outliers clipped)"]
    assert window.heatmaps.color_bar.levels()[1] < 50  # the outlier does not set the scale
    assert "clipped at" in window.heatmaps.caption.text()


def test_the_colour_bar_s_title_stays_centred_on_the_bar_as_it_changes(window, settle):
    show_stage(window, settle, "softmax")  # the title 'weight'
    x = window.controller.trace.tensors["input"]["X"]
    x[0, :, 5] = 500.0
    show_stage(window, settle, "input")  # a longer title on a bar of the same height
    texts, shapes = drawn(window.heatmaps)
    title = next(t for t in texts if t.role == "bar")
    bar = next(s for s in shapes if s.owner == "colour bar")
    assert title.text == "X (outliers clipped)"
    assert abs(title.rect.center().y() - bar.rect.center().y()) <= 3, (title.rect, bar.rect)


def test_a_head_opened_large_names_its_axes_as_the_grid_does(window, settle, qtbot):
    for stage in ("input", "softmax"):
        show_stage(window, settle, stage)
        dialog = window.heatmaps.open_head(0)
        qtbot.waitExposed(dialog, timeout=UI_MS)
        words = [t.text for t in drawn(dialog)[0] if t.role in ("rows", "columns")]
        assert words == list(window.heatmaps.maps.axes.lines()), stage
        dialog.close()
