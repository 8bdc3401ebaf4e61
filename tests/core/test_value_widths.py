"""The widths the stages after the softmax draw come from the plan: a head's values and
the heads side by side are d_k and D under MHA, d_v and H·d_v under latent attention."""

from __future__ import annotations

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.display.value_widths import value_widths
from mha_explorer.core.plan.build import build_plan


def test_mha_draws_d_k_and_d():
    cfg = MHAConfig(d_model=96, n_heads=3, batch=2, seq=5)
    widths = value_widths(build_plan(cfg))
    assert widths.head == ("d_k", 32) and widths.merged == ("D", 96) and widths.model == ("D", 96)


def test_latent_attention_draws_its_value_width():
    cfg = MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, mla=True, kv_lora_rank=16,
                    qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=12)
    widths = value_widths(build_plan(cfg))
    assert widths.head == ("d_v", 12) and widths.merged == ("H·d_v", 48)  # 4 heads × 12
    assert widths.model == ("D", 64)
    assert widths.sizes() == {"d_v": 12, "H·d_v": 48, "D": 64}
