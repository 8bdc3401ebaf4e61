"""Under latent attention the last three stages are drawn as under MHA, in MLA's own
widths: A·V with values d_v wide, the heads merged into H·d_v, W_O from H·d_v back to D,
each a picture of tensors and operators with their shapes, not an empty box."""

from __future__ import annotations

import pytest

from mha_explorer.core.config import MHAConfig
from mha_explorer.qt.stage.diagram_items import BlockItem, GridItem

# each width a different number, so a d_k drawn where d_v belongs shows
MLA = MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu", mla=True, kv_lora_rank=16,
                q_lora_rank=24, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=12, positions="rope")
SIZES = [(1024, 768), (1280, 720), (1920, 1080)]


def _words(texts: list[str]) -> set[str]:
    return {" ".join(t.split()) for t in texts}  # a caption wrapped onto two lines reads as one


def _expected(cfg: MHAConfig) -> dict[str, set[str]]:
    B, H, T, S, D, d_v = cfg.batch, cfg.H, cfg.T, cfg.S, cfg.d_model, cfg.v_head_dim
    merged = H * d_v
    return {
        "weighted_sum": {f"S={S}", f"T={T}", f"d_v={d_v}", f"H={H}", "A head 0", "V head 0",
                         f"context [{B}, {H}, {T}, {d_v}]"},
        "merge": {f"d_v={d_v}", f"H·d_v={merged}", f"context [{B}, {T}, {H}, {d_v}]",
                  f"merged [{B}, {T}, {merged}]"},
        "output": {f"H·d_v={merged}", f"D={D}", "×", "=", f"merged [{B}, {T}, {merged}]",
                   f"W_Oᵀ {merged} × {D}", f"Y [{B}, {T}, {D}]"},
    }


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_latent_attentions_last_stages_draw_their_tensors_in_mlas_widths(qtbot, make_window, size):
    window = make_window(MLA, size=size)
    window.set_reduced_motion(True, remember=False)
    diagram = window.stage_view.diagram
    for stage, texts in _expected(window.controller.config).items():
        window.controller.set_stage(stage)
        assert diagram.generic.isHidden(), stage  # the scene's drawing, not one box per tensor
        items = diagram.items_by_key()
        assert any(isinstance(i, (BlockItem, GridItem)) for i in items.values()), stage
        drawn = _words(diagram.label_texts())
        assert texts <= drawn, (stage, sorted(texts - drawn))
        assert not any(t.startswith("d_k=") for t in drawn), stage  # D/H is no width of MLA's
        shown = diagram.mapToScene(diagram.viewport().rect()).boundingRect()
        for key, item in items.items():  # the whole picture in the pane
            assert shown.adjusted(-2, -2, 2, 2).contains(item.sceneBoundingRect()), (stage, key)
