"""The variants slot into the plan: positions in their place, MLA's own stages and counts."""

from __future__ import annotations

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.presets import get_preset
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.plan.masks import mask_summary
from mha_explorer.core.stages.catalog import STAGE_IDS
from mha_explorer.core.variants.registry import family_of, plan_summaries


def _ids(cfg: MHAConfig) -> list[str]:
    return list(build_plan(cfg).stage_ids)


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
    assert family_of(cfg).params(cfg).total == 13_763_072  # as in test_presets
    assert build_plan(cfg).params.total == 13_763_072
    summary = plan_summaries(cfg)["mla"]
    assert summary["folded_output_weight"] == 16 * 512 * 2048  # W_OUV: H·r_kv × D
    assert plan_summaries(MHAConfig())["mla"] is None


def test_kv_cache_figures_keep_the_json_keys_and_bound_the_window():
    # Mistral: 2 · 8 · 128 · 2 B (bfloat16) = 4,096 B per token; S 10,000 under window 4,096
    cfg = get_preset("mistral-7b").apply(MHAConfig(seq=10_000, batch=2, dtype="bfloat16"))
    memory = build_plan(cfg).to_dict()["memory"]
    assert {k: memory[k] for k in ("kv_cache_per_token", "kv_cache_per_sequence", "kv_cache_batch",
                                   "kv_cache_tokens")} == {
        "kv_cache_per_token": 4_096, "kv_cache_per_sequence": 4_096 * 4_096,
        "kv_cache_batch": 2 * 4_096 * 4_096, "kv_cache_tokens": 4_096}


def test_mask_summary_counts_a_causal_square():
    s = mask_summary(MHAConfig(seq=4, causal=True))  # 1 + 2 + 3 + 4 = 10 of 16
    assert (s["cells"], s["visible"], s["masked"]) == (16, 10, 6)
    assert s["skipped_flops"]["softmax"] == 2 * 8 * 6 * 5  # B 2, H 8, 6 masked cells, 5 ops


def test_the_plan_carries_the_window_bound_cache_and_mla_counts():
    # LLaMA-3 8B shape (stored in bf16: 2 B) with a window of 3 over S = 10:
    # 2 · 8 · 128 · 2 B = 4,096 B per token, min(10, 3) = 3 tokens per sequence, B = 2
    cfg = get_preset("llama3-8b").apply(MHAConfig(seq=10, batch=2)).replace(window=3)
    assert cfg.dtype == "bfloat16"
    memory = build_plan(cfg).to_dict()["memory"]
    assert memory["kv_cache_per_token"] == 2 * 8 * 128 * 2
    assert memory["kv_cache_per_sequence"] == 2 * 8 * 128 * 2 * 3
    assert memory["kv_cache_batch"] == 2 * 8 * 128 * 2 * 3 * 2
    lite = build_plan(get_preset("deepseek-v2-lite").apply(MHAConfig(seq=4, batch=1)))
    assert lite.memory.kv_cache_per_token == (512 + 64) * 2  # (r_kv + d_r) · itemsize (bf16)
    assert lite.params.total == 13_763_072
    assert lite.stage("kv_compress").tensor("c_KV").shape == (1, 4, 512)
    assert lite.to_dict()["mla"]["absorbed_flops"] > 0


def test_an_edit_that_changes_the_stage_list_keeps_a_stage_doing_the_same_job():
    from mha_explorer.core.stages.catalog import carry_stage

    mha = build_plan(MHAConfig()).stage_ids
    latent = build_plan(MHAConfig(mla=True, positions="rope")).stage_ids
    assert carry_stage("softmax", latent) == "softmax"  # in both lists
    assert carry_stage("project", latent) == "q_project"
    assert carry_stage("transpose", latent) == "heads"
    assert carry_stage("kv_expand", mha) == "project"
    assert carry_stage("rope", mha) == "transpose"  # RoPE switched off
    assert carry_stage("positions", mha) == "input"
    assert carry_stage("nonsense", mha) == "input"
