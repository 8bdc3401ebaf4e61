"""The variant widgets: the fields edit the config through the controller and explain
mistakes inline; the KV table, the RoPE plot and the generic stage drawing show the
numbers a person can check by hand."""

from __future__ import annotations

import numpy as np
import pytest

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.presets import get_preset
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.plan.kv_cache import model_layers
from mha_explorer.qt.panels.kv_compare import KVCompareTable, text_bar
from mha_explorer.qt.panels.variant_fields import ATTENTION_KINDS, VariantFields
from mha_explorer.qt.stage.generic_stage import GenericStageView, is_generic, stage_blocks
from mha_explorer.qt.stage.rope_plot import RopePlot

SMALL = MHAConfig(d_model=64, n_heads=4, batch=1, seq=8, device="cpu")


def _pick(fields: VariantFields, kind: str) -> None:
    i = ATTENTION_KINDS.index(kind)
    fields.kind_box.setCurrentIndex(i)
    fields.kind_box.activated.emit(i)


def test_fields_switch_the_attention_kind(qtbot, make_controller):
    c = make_controller(SMALL, wait=False)
    fields = VariantFields(c)
    qtbot.addWidget(fields)
    _pick(fields, "MLA")
    assert c.config.mla and c.config.variant == "MLA" and fields.family_groups["latent"].isVisibleTo(fields)
    fields.spins["kv_lora_rank"].setValue(24)
    assert c.config.kv_lora_rank == 24
    _pick(fields, "GQA")
    # H = 4: the only count strictly between 1 and H is 2
    assert c.config.variant == "GQA" and c.config.kv_lora_rank is None and c.config.Hkv == 2
    _pick(fields, "MQA")
    assert c.config.Hkv == 1


def test_mask_and_positions_fields_edit_the_config(qtbot, make_controller):
    c = make_controller(SMALL.replace(causal=True), wait=False)
    fields = VariantFields(c)
    qtbot.addWidget(fields)
    fields.spins["window"].setValue(3)
    fields.spins["global_tokens"].setValue(1)
    fields.positions_box.setCurrentIndex(fields.positions_box.findText("rope"))
    fields.positions_box.activated.emit(fields.positions_box.currentIndex())
    assert (c.config.window, c.config.global_tokens, c.config.positions) == (3, 1, "rope")
    fields.spins["global_tokens"].setValue(0)
    fields.spins["window"].setValue(0)  # "off" clears the window
    assert c.config.window is None


def test_a_mistake_is_explained_inline_and_a_fix_applies(qtbot, make_controller):
    c = make_controller(SMALL, wait=False)
    fields = VariantFields(c)
    qtbot.addWidget(fields)
    fields.spins["global_tokens"].setValue(2)  # globals need a window or a stride
    assert c.config.global_tokens == 0  # the last valid config is kept
    assert fields.error_label.isVisibleTo(fields) and "global tokens" in fields.error_label.text()
    buttons = fields.suggestion_buttons()
    assert buttons
    buttons[-1].click()  # the window fix keeps the person's global tokens
    assert c.error is None and c.config.window is not None and c.config.global_tokens == 2
    assert not fields.error_label.isVisibleTo(fields)


def test_kv_table_rows_are_the_arithmetic(qtbot, make_controller):
    cfg = get_preset("mistral-7b").apply(MHAConfig(seq=8192, batch=4, dtype="bfloat16"))
    c = make_controller(cfg, wait=False)
    table = KVCompareTable(c)
    qtbot.addWidget(table)
    assert table.layers == 32 == model_layers(cfg)
    rows = {r.variant: r for r in table.rows}
    assert rows["MHA"].per_token == 2 * 32 * 128 * 2  # 2 · H · d_k · bfloat16
    assert rows["MLA"].per_token == (4 * 128 + 64) * 2  # (r_kv = 4·d_k, d_r = d_k/2) · 2 B
    assert rows["window"].per_sequence == 2 * 8 * 128 * 2 * 4096  # GQA's, min(8192, 4096) tokens
    assert rows["window"].whole_model == 2 * 8 * 128 * 2 * 4096 * 4 * 32
    shown = [table.table.item(r, 0).text() for r in range(table.table.rowCount())]
    assert shown == ["MHA", "GQA (current)", "MQA", "MLA", "window (current)"]
    assert table.table.item(1, 0).font().bold() and not table.table.item(0, 0).font().bold()
    assert table.table.item(4, 5).toolTip() == f"{2 * 8 * 128 * 2 * 4096:,} bytes"


def test_text_bar_fills_in_eighths():
    assert text_bar(1.0, 4) == "████" and text_bar(0.0, 4) == "    "
    assert text_bar(0.5, 4) == "██  " and text_bar(1 / 32, 4) == "▏   "


def test_rope_plot_curves(qtbot, make_controller):
    c = make_controller(SMALL.replace(positions="rope"))
    plot = RopePlot(c)
    qtbot.addWidget(plot)
    x, y = plot.ones_curve.getData()
    assert x[0] == 0 and y[0] == pytest.approx(16.0)  # q = k = ones of d_k = 16: q·k = 16 at d = 0
    q = c.trace.tensors["transpose"]["Q"][0, 0, 0]
    k = c.trace.tensors["transpose"]["K"][0, 0, 0]
    _, own = plot.layer_curve.getData()
    assert own[0] == pytest.approx(float(np.dot(q, k)), rel=1e-5)  # no turn at distance 0
    assert not plot.window_line.isVisible()
    c.update(causal=True, window=5)
    assert plot.window_line.isVisible() and plot.window_line.value() == 5


def test_generic_blocks_carry_the_plans_dims():
    plan = build_plan(get_preset("deepseek-v2-lite").apply(MHAConfig(seq=16, batch=1)))
    stage = plan.stage("kv_compress")
    blocks = stage_blocks(stage)
    assert [b.name for b in blocks] == ["c_KV", "k_rope"]
    assert blocks[0].chips == (("B", 1), ("S", 16), ("r_kv", 512))
    assert blocks[0].width > blocks[1].width  # 512 wide against 64
    heads = stage_blocks(plan.stage("heads"))
    assert all(not b.allocates and b.caption.startswith("view") for b in heads)
    assert is_generic("kv_compress") and not is_generic("softmax")


def test_generic_view_paints_a_stage(qtbot):
    view = GenericStageView()
    qtbot.addWidget(view)
    view.set_stage(build_plan(SMALL.replace(positions="rope")).stage("rope"))
    view.resize(600, 300)
    image = view.grab().toImage()
    assert view.accessibleName() == "Rotate Q and K by position (RoPE)"
    colors = {image.pixel(x, y) for x in range(0, 600, 7) for y in range(0, 300, 7)}
    assert len(colors) > 3  # text, blocks and chips were drawn


def test_latent_attention_greys_out_the_head_sharing_and_d_k_saying_why(qtbot, make_controller):
    from mha_explorer.core.variants.registry import family_of
    from mha_explorer.qt.panels.configuration import ControlsPanel

    c = make_controller(SMALL, wait=False)
    controls, fields = ControlsPanel(c), VariantFields(c)
    qtbot.addWidget(controls)
    qtbot.addWidget(fields)
    assert all(b.isEnabled() for b in controls.kv_buttons.values())
    controls.preset_combo.setCurrentIndex(controls.preset_combo.findData("deepseek-v3"))
    assert c.config.variant == "MLA"
    for mode, button in controls.kv_buttons.items():
        assert not button.isEnabled() and not button.isChecked(), mode
        assert "Not for" in button.toolTip() and "MLA" in button.toolTip()
    assert not controls.kv_spin.isEnabled()
    widths = family_of(c.config).widths(c.config)
    assert f"d_k = {c.config.d_k}" not in controls.d_k_label.text()  # D / H is not a head here
    assert f"q·k {widths.qk:,}" in controls.d_k_label.text()
    assert "MLA" in controls.kv_note.text()
    _pick(fields, "MHA")  # the way back is under Attention
    assert all(b.isEnabled() for b in controls.kv_buttons.values())
    assert controls.kv_buttons["MHA"].isChecked()
    assert controls.d_k_label.text() == f"d_k = {c.config.d_k:,}"
