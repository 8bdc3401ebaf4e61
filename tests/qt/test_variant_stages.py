"""The window follows the config's own list of stages: latent attention (MLA), RoPE and
sinusoidal positions step through every stage with the keyboard, each drawn, the counter
saying where we are; switching between MHA and MLA keeps a stage doing the same job."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.stages.catalog import STAGE_IDS

SMALL = {"d_model": 64, "n_heads": 4, "batch": 2, "seq": 6, "device": "cpu"}
# latent attention at a small size: each dim counted apart, so a wrong one shows
MLA = {**SMALL, "mla": True, "kv_lora_rank": 16, "q_lora_rank": 24, "qk_nope_head_dim": 8,
       "qk_rope_head_dim": 4, "v_head_dim": 12, "positions": "rope"}
CASES = {
    "mla": (MLA, ("input", "q_project", "kv_compress", "kv_expand", "heads", "rope", "scores",
                  "softmax", "weighted_sum", "merge", "output")),
    "rope": ({**SMALL, "positions": "rope"}, (*STAGE_IDS[:4], "rope", *STAGE_IDS[4:])),
    "sinusoidal": ({**SMALL, "positions": "sinusoidal"}, (STAGE_IDS[0], "positions", *STAGE_IDS[1:])),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_right_arrow_walks_every_stage_of_the_variant(qtbot, make_window, case):
    fields, expected = CASES[case]
    window = make_window(MHAConfig(**fields))
    c, view = window.controller, window.stage_view
    assert c.plan.stage_ids == expected  # the list written out above, not read from the code
    heads = window.heatmaps
    seen = []
    for i, stage in enumerate(expected):
        assert c.stage == stage
        assert view.counter.text().startswith(f"Stage {i + 1} of {len(expected)}")
        assert window.stepper.stage_buttons[stage].isChecked()
        texts = view.diagram.label_texts()
        assert texts, f"nothing drawn at {stage}"
        generic = view.diagram.uses_generic(stage)
        # latent attention's own stages are drawn generically; after its softmax the
        # classic pictures draw its tensors, which keep the classic layout
        own = case == "mla" and stage not in ("weighted_sum", "merge", "output")
        assert generic == (own or stage in ("positions", "rope"))
        assert view.diagram.generic.isVisible() == generic
        assert heads.maps is not None and heads.maps.stage == stage
        seen.append(len(heads.maps.maps))
        qtbot.keyClick(window, Qt.Key.Key_Right)
    assert c.stage == expected[-1]  # Right at the end stays there
    assert all(n > 0 for n in seen), dict(zip(expected, seen, strict=True))
    if "rope" in expected:
        c.set_stage("rope")
        assert view.rope_plot is not None and view.rope_plot.isVisible()
        c.set_stage("scores")
        assert not view.rope_plot.isVisible()


MHA_AGAIN = {"mla": False, "kv_lora_rank": None, "q_lora_rank": None, "qk_nope_head_dim": None,
             "qk_rope_head_dim": None, "v_head_dim": None}


def test_switching_to_latent_attention_and_back_keeps_a_stage_doing_the_same_job(qtbot, make_window):
    window = make_window(MHAConfig(**SMALL))
    c = window.controller
    c.set_stage("project")
    c.update(mla=True, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=12)
    assert c.config.mla and c.stage == "q_project"
    assert window.stepper.stage_buttons["q_project"].isChecked()
    assert list(window.stepper.stage_buttons) == list(c.plan.stage_ids)
    c.set_stage("softmax")
    c.update(**MHA_AGAIN)
    assert not c.config.mla and c.stage == "softmax"  # present in both lists: kept
    c.set_stage("transpose")
    c.update(mla=True)
    assert c.stage == "heads"
    c.update(**MHA_AGAIN)
    assert c.stage == "transpose"
    assert window.stage_view.counter.text().startswith(f"Stage 4 of {len(STAGE_IDS)}")


def test_export_numbers_the_files_in_the_configs_own_order(qtbot, tmp_path):
    from mha_explorer.qt.shell.export import ExportOptions, export_stages

    cfg = MHAConfig(**CASES["rope"][0])
    options = ExportOptions(size=(640, 400), formats=("png",), tables=False)
    written = export_stages(cfg, None, "all", tmp_path, options=options)
    stems = [p.name for p in written if not p.name.endswith("-heads.png")]
    assert stems == [f"{i:02d}-{s}.png" for i, s in enumerate(CASES["rope"][1], start=1)]
    assert stems[4] == "05-rope.png"
    with pytest.raises(ValueError, match="no stage 'positions' in this configuration"):
        export_stages(cfg, None, ("positions",), tmp_path / "other", options=options)


@pytest.mark.parametrize("case", ["mla", "rope"])
def test_each_variant_stage_says_its_title_once_and_its_chips_fit(qtbot, make_window, case):
    fields, expected = CASES[case]
    window = make_window(MHAConfig(**fields), size=(1280, 720))
    window.set_reduced_motion(True, remember=False)
    c, view = window.controller, window.stage_view
    generic = view.diagram.generic
    for stage in expected:
        c.set_stage(stage)
        if not view.diagram.uses_generic(stage):
            continue
        shown = c.plan.stage(stage)
        drawn = view.diagram.label_texts()
        assert view.title.text() == shown.title  # the header says it, and only the header
        assert shown.title not in drawn and shown.formula not in drawn, stage
        pane = generic.rect()
        for placed in generic.placed():
            for label, rect in placed.chips:
                assert pane.contains(rect.toAlignedRect()), (stage, label)
                assert placed.column.left() <= rect.left() and rect.right() <= placed.column.right()
            assert pane.contains(placed.body.toAlignedRect()), (stage, placed.block.name)
    # latent attention's softmax shows the chosen head's weights, not an empty box
    if case == "mla":
        c.set_head(1)
        c.set_stage("softmax")
        assert set(generic.matrices) == {"weights"}
        assert f"head 1 of {c.config.H}" in view.diagram.label_texts()
        image = generic.matrices["weights"]
        assert (image.width(), image.height()) == (c.config.S, c.config.T)
