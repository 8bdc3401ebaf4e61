"""The variant flags turn into config changes; contradictions are ConfigErrors naming the field."""

from __future__ import annotations

import argparse

import pytest

from mha_explorer.cli import add_config_flags, config_from_args
from mha_explorer.cli_variant_flags import add_variant_flags, check_attention_choice, variant_changes
from mha_explorer.core.config import ConfigError, MHAConfig


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_config_flags(parser)
    add_variant_flags(parser)
    return parser.parse_args(list(argv))


def _config(*argv: str) -> MHAConfig:
    args = _args(*argv)
    data = config_from_args(args).to_dict()
    data.update(variant_changes(args))
    cfg = MHAConfig.from_dict(data)
    check_attention_choice(args, cfg)
    return cfg


def test_no_variant_flag_changes_nothing():
    assert variant_changes(_args("--heads", "4")) == {}


def test_mla_flags_set_the_latent_sizes():
    cfg = _config("--attention", "mla", "--kv-lora-rank", "64", "--q-lora-rank", "32",
                  "--qk-nope-dim", "16", "--qk-rope-dim", "8", "--v-head-dim", "12")
    assert cfg.mla and cfg.variant == "MLA"
    assert (cfg.kv_lora_rank, cfg.q_lora_rank, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim,
            cfg.v_head_dim) == (64, 32, 16, 8, 12)


def test_mask_and_position_flags():
    cfg = _config("--causal", "--window", "4", "--stride", "2", "--global-tokens", "1",
                  "--positions", "rope")
    assert (cfg.window, cfg.stride, cfg.global_tokens, cfg.positions) == (4, 2, 1, "rope")


def test_none_clears_a_presets_window():
    assert _config("--preset", "mistral-7b").window == 4096
    assert _config("--preset", "mistral-7b", "--window", "none").window is None


def test_mha_after_an_mla_preset_clears_the_latent_sizes():
    cfg = _config("--preset", "deepseek-v2-lite", "--attention", "mha")
    assert not cfg.mla and cfg.kv_lora_rank is None and cfg.variant == "MHA" and cfg.d_model == 2048


def test_mqa_sets_one_kv_head_and_gqa_keeps_the_given_ones():
    assert _config("--heads", "8", "--attention", "mqa").Hkv == 1
    assert _config("--heads", "8", "--kv-heads", "2", "--attention", "gqa").variant == "GQA"


def test_gqa_without_fewer_kv_heads_names_the_field():
    with pytest.raises(ConfigError) as info:
        _config("--heads", "8", "--attention", "gqa")
    assert info.value.field == "n_kv_heads" and {"n_kv_heads": 2} in info.value.suggestions


@pytest.mark.parametrize("argv, field", [
    (("--attention", "mqa", "--kv-heads", "2"), "n_kv_heads"),
    (("--attention", "mla", "--kv-heads", "2"), "n_kv_heads"),
    (("--attention", "mha", "--kv-lora-rank", "64"), "kv_lora_rank"),
])
def test_contradictions_name_the_field(argv, field):
    with pytest.raises(ConfigError) as info:
        variant_changes(_args(*argv))
    assert info.value.field == field


def test_a_word_for_a_number_is_an_argparse_error():
    with pytest.raises(SystemExit):
        _args("--window", "wide")
