"""The variants slot into the plan: positions in their place, MLA's own stages and counts."""

from __future__ import annotations

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan import STAGE_IDS, build_plan, param_plan
from mha_explorer.core.presets import get_preset
from mha_explorer.core.variant_plan import (
    kv_cache_figures,
    mask_summary,
    mla_summary,
    params_for,
    stage_list,
)


def _ids(cfg: MHAConfig) -> list[str]:
    return [s.id for s in stage_list(cfg, build_plan(cfg).stages)]


def test_positions_step_sits_where_it_acts():
    assert _ids(MHAConfig()) == list(STAGE_IDS)
    ids = _ids(MHAConfig(positions="sinusoidal"))
    assert ids[:2] == ["input", "positions"]
    ids = _ids(MHAConfig(positions="rope"))
    assert ids[ids.index("transpose") + 1] == "rope" and len(ids) == len(STAGE_IDS) + 1


def test_mla_preset_gets_latent_stages_and_parameters():
    cfg = get_preset("deepseek-v2-lite").apply(MHAConfig(seq=4, batch=1))
    ids = _ids(cfg)
    assert "kv_compress" in ids and "kv_expand" in ids and "rope" in ids
    assert params_for(cfg, param_plan(cfg)).total == 13_763_072  # as in test_presets
    summary = mla_summary(cfg)
    assert summary["folded_output_weight"] == 16 * 512 * 2048  # W_OUV: H·r_kv × D
    assert mla_summary(MHAConfig()) is None


def test_kv_cache_figures_keep_the_json_keys_and_bound_the_window():
    # Mistral: 2 · 8 · 128 · 2 B (bfloat16) = 4,096 B per token; S 10,000 under window 4,096
    cfg = get_preset("mistral-7b").apply(MHAConfig(seq=10_000, batch=2, dtype="bfloat16"))
    assert kv_cache_figures(cfg) == {"kv_cache_per_token": 4_096, "kv_cache_per_sequence": 4_096 * 4_096,
                                     "kv_cache_batch": 2 * 4_096 * 4_096, "kv_cache_tokens": 4_096}


def test_mask_summary_counts_a_causal_square():
    s = mask_summary(MHAConfig(seq=4, causal=True))  # 1 + 2 + 3 + 4 = 10 of 16
    assert (s["cells"], s["visible"], s["masked"]) == (16, 10, 6)
    assert s["skipped_flops"]["softmax"] == 2 * 8 * 6 * 5  # B 2, H 8, 6 masked cells, 5 ops
