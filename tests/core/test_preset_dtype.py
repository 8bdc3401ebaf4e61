"""Presets carry the dtype the model is stored in, so the KV cache they show is the
model's own: LLaMA-3 8B caches K and V for 8 heads of 128 in bfloat16."""

from __future__ import annotations

import pytest
import torch

from mha_explorer.core.config import DTYPES, MHAConfig
from mha_explorer.core.config.presets import PRESETS, get_preset
from mha_explorer.core.plan.kv_cache import kv_compare_rows


def test_llama3_8b_caches_4_kib_per_token_and_layer():
    cfg = get_preset("llama3-8b").apply(MHAConfig(batch=1, seq=1))
    assert cfg.dtype == "bfloat16"
    current = next(r for r in kv_compare_rows(cfg) if r.current)
    # K and V, 8 heads × 128 numbers, 2 bytes each (torch's own element size)
    element = torch.empty((), dtype=torch.bfloat16).element_size()
    assert current.per_token == 2 * 8 * 128 * element == 4096


@pytest.mark.parametrize("key", ["llama3-8b", "mistral-7b", "falcon-7b", "deepseek-v3"])
def test_models_stored_in_bfloat16_are_shown_in_bfloat16(key):
    assert get_preset(key).apply(MHAConfig()).dtype == "bfloat16"


def test_every_preset_names_a_dtype_the_config_knows():
    assert {p.dtype for p in PRESETS.values()} <= set(DTYPES)
    assert get_preset("gpt2").apply(MHAConfig(dtype="bfloat16")).dtype == "float32"
