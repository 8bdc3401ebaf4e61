"""MLA sizes, rules, parameters and cache, against module shapes and written-out arithmetic."""

from __future__ import annotations

import pytest
from torch import nn

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.variants.latent.dims import check_mla, kv_cache_per_token, mla_dims, mla_param_plan


def block_modules(D, H, r_kv, r_q, nope, rope, v, bias) -> list[nn.Module]:
    """An MLA block's modules on the meta device, shaped as DeepSeek's code builds them."""
    mods: list[nn.Module] = []
    if r_q is None:
        mods.append(nn.Linear(D, H * (nope + rope), bias=False, device="meta"))
    else:
        mods += [nn.Linear(D, r_q, bias=bias, device="meta"), nn.RMSNorm(r_q, device="meta"),
                 nn.Linear(r_q, H * (nope + rope), bias=False, device="meta")]
    mods += [nn.Linear(D, r_kv + rope, bias=bias, device="meta"), nn.RMSNorm(r_kv, device="meta"),
             nn.Linear(r_kv, H * (nope + v), bias=False, device="meta"),
             nn.Linear(H * v, D, bias=bias, device="meta")]
    return mods


@pytest.mark.parametrize("r_q", [None, 24])
@pytest.mark.parametrize("bias", [False, True])
def test_param_count_equals_module_shapes(r_q, bias):
    cfg = MHAConfig(d_model=64, n_heads=4, mla=True, q_lora_rank=r_q, kv_lora_rank=40,
                    qk_nope_head_dim=12, qk_rope_head_dim=6, v_head_dim=10, bias=bias)
    mods = block_modules(64, 4, 40, r_q, 12, 6, 10, bias)
    assert mla_param_plan(cfg).total == sum(p.numel() for m in mods for p in m.parameters())


def test_every_term_shows_formula_numbers_and_count():
    cfg = MHAConfig(d_model=64, n_heads=4, mla=True, q_lora_rank=24, kv_lora_rank=40,
                    qk_nope_head_dim=12, qk_rope_head_dim=6, v_head_dim=10, bias=False)
    terms = {t.name: (t.formula, t.numbers, t.count) for t in mla_param_plan(cfg).terms}
    assert terms == {
        "q_a_proj": ("D × r_q", "64 × 24", 1536),
        "q_a_layernorm": ("r_q", "24", 24),
        "q_b_proj": ("r_q × H·(d_n+d_r)", "24 × 72", 1728),  # 4 heads of 12 + 6
        "kv_a_proj_with_mqa": ("D × (r_kv+d_r)", "64 × 46", 2944),
        "kv_a_layernorm": ("r_kv", "40", 40),
        "kv_b_proj": ("r_kv × H·(d_n+d_v)", "40 × 88", 3520),  # 4 heads of 12 + 10
        "o_proj": ("H·d_v × D", "40 × 64", 2560),
    }


def test_defaults_follow_d_k():
    m = mla_dims(MHAConfig(d_model=1024, n_heads=8, mla=True))  # d_k 128, as DeepSeek
    assert (m.nope, m.rope, m.v, m.kv_lora_rank, m.q_lora_rank) == (128, 64, 128, 512, None)
    assert mla_dims(MHAConfig(d_model=12, n_heads=4, mla=True)).rope == 2  # d_k 3: at least one pair


def test_kv_cache_per_token_is_latent_plus_rope_key():
    cfg = MHAConfig(d_model=1024, n_heads=8, mla=True, dtype="bfloat16")
    assert kv_cache_per_token(cfg) == (512 + 64) * 2  # 1,152 B, against 2·8·128·2 = 4,096 for MHA


def test_mla_fields_without_mla_name_the_field_and_offer_both_fixes():
    with pytest.raises(ConfigError) as info:
        check_mla(_unvalidated(kv_lora_rank=64))
    assert info.value.field == "kv_lora_rank"
    assert "latent attention is off" in info.value.message
    assert {"mla": True} in info.value.suggestions and {"kv_lora_rank": None} in info.value.suggestions


def _unvalidated(**kw) -> MHAConfig:
    cfg = object.__new__(MHAConfig)
    object.__setattr__(cfg, "__dict__", dict(MHAConfig().__dict__, **kw))
    return cfg


def test_mla_with_fewer_kv_heads_is_refused():
    with pytest.raises(ConfigError) as info:
        check_mla(_unvalidated(mla=True, n_kv_heads=2))
    assert info.value.field == "n_kv_heads" and {"n_kv_heads": None} in info.value.suggestions


def test_odd_rope_width_is_refused_with_even_neighbours():
    with pytest.raises(ConfigError) as info:
        check_mla(_unvalidated(mla=True, qk_rope_head_dim=7))
    assert info.value.field == "qk_rope_head_dim"
    assert info.value.suggestions == [{"qk_rope_head_dim": 6}, {"qk_rope_head_dim": 8}]


def test_a_valid_mla_config_passes():
    check_mla(_unvalidated(mla=True, kv_lora_rank=32, q_lora_rank=16, qk_rope_head_dim=8))
    check_mla(_unvalidated())


@pytest.mark.parametrize("key", ["deepseek-v2-lite", "deepseek-v3"])
def test_each_terms_numbers_multiply_to_its_count(key):
    from mha_explorer.core.config.presets import get_preset

    plan = mla_param_plan(get_preset(key).apply(MHAConfig()))
    for term in plan.terms:
        product = 1
        for factor in term.numbers.split(" × "):
            product *= int(factor)
        assert product == term.count, term.name
    assert plan.total == sum(t.count for t in plan.terms)
