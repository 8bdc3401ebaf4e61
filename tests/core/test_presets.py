"""Presets: attention parameters per layer, exact, as in the real checkpoints.

The expected numbers are written out with their arithmetic, and checked a
second time against torch modules built with the checkpoints' own layer shapes
(on the meta device: shapes only, no memory), so a wrong preset field (bias,
key/value heads, width, a latent-attention size) shows up twice.
"""

from __future__ import annotations

import pytest
from torch import nn

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.config.presets import PRESETS, get_preset
from mha_explorer.core.plan.kv_cache import kv_compare_rows
from mha_explorer.core.variants.grouped.params import param_plan as mha_param_plan
from mha_explorer.core.variants.latent.dims import mla_param_plan


def param_plan(cfg: MHAConfig):
    return mla_param_plan(cfg) if cfg.mla else mha_param_plan(cfg)


EXPECTED = {
    "transformer-base": 1_048_576,  # 4·512² = 4·262,144, no bias
    "gpt2": 2_362_368,  # 4·768² + 4·768 = 2,359,296 + 3,072
    "gpt2-medium": 4_198_400,  # 4·1024² + 4·1024 = 4,194,304 + 4,096
    "gpt2-large": 6_558_720,  # 4·1280² + 4·1280 = 6,553,600 + 5,120
    "gpt2-xl": 10_246_400,  # 4·1600² + 4·1600 = 10,240,000 + 6,400
    "bert-base": 2_362_368,  # as GPT-2 small: 768 wide, four projections with bias
    "bert-large": 4_198_400,  # as GPT-2 medium
    "gpt3-175b": 604_028_928,  # 4·12288² + 4·12288 = 603,979,776 + 49,152
    "llama2-7b": 67_108_864,  # 4·4096² = 4·16,777,216, no bias
    "llama2-70b": 150_994_944,  # 2·8192² + 2·8192·1024 = 134,217,728 + 16,777,216
    "llama3-8b": 41_943_040,  # 2·4096² + 2·4096·1024 = 33,554,432 + 8,388,608
    "mistral-7b": 41_943_040,  # same shapes as LLaMA-3 8B
    "falcon-7b": 41_877_504,  # 4544·(4544 + 2·64) + 4544² = 21,229,568 + 20,647,936
    # q_proj 2048·16·(128+64) = 6,291,456; kv_a_proj_with_mqa 2048·(512+64) = 1,179,648;
    # kv_a_layernorm 512; kv_b_proj 512·16·(128+128) = 2,097,152; o_proj 16·128·2048 = 4,194,304
    "deepseek-v2-lite": 13_763_072,
    # q_a_proj 7168·1536 = 11,010,048; q_a_layernorm 1,536; q_b_proj 1536·128·192 = 37,748,736;
    # kv_a_proj_with_mqa 7168·576 = 4,128,768; kv_a_layernorm 512; kv_b_proj 512·128·256 = 16,777,216;
    # o_proj 128·128·7168 = 117,440,512
    "deepseek-v3": 187_107_328,
    # q_proj 640·(4·256) = 655,360; k_proj, v_proj 640·256 = 163,840 each; o_proj 1024·640 = 655,360;
    # input_layernorm 640; q_norm, k_norm 256 each (heads are 256 wide although D / H = 160)
    "gemma3-270m": 1_639_552,
    # q_proj 576·576 = 331,776; k_proj, v_proj 576·(3·64) = 110,592 each; o_proj 576·576 = 331,776;
    # input_layernorm 576 (no q/k norms)
    "smollm2-135m": 885_312,
}

# (d_model, heads, kv heads, bias) as the published model configs have them
PUBLISHED = {
    "transformer-base": (512, 8, 8, False),
    "gpt2": (768, 12, 12, True), "gpt2-medium": (1024, 16, 16, True),
    "gpt2-large": (1280, 20, 20, True), "gpt2-xl": (1600, 25, 25, True),
    "bert-base": (768, 12, 12, True), "bert-large": (1024, 16, 16, True),
    "gpt3-175b": (12288, 96, 96, True),
    "llama2-7b": (4096, 32, 32, False), "llama2-70b": (8192, 64, 8, False),
    "llama3-8b": (4096, 32, 8, False), "mistral-7b": (4096, 32, 8, False),
    "falcon-7b": (4544, 71, 1, False),  # multi_query: one K/V head of 64
    "deepseek-v2-lite": (2048, 16, 16, False), "deepseek-v3": (7168, 128, 128, False),
    "gemma3-270m": (640, 4, 1, False),  # head_dim 256
    "smollm2-135m": (576, 9, 3, False),  # head_dim 64
}

# the published configs' MLA fields: (q_lora_rank, kv_lora_rank, qk_nope, qk_rope, v_head_dim)
PUBLISHED_MLA = {
    "deepseek-v2-lite": (None, 512, 128, 64, 128),
    "deepseek-v3": (1536, 512, 128, 64, 128),
}
# num_hidden_layers, positions and sliding window as the models ship
PUBLISHED_LAYOUT = {
    "transformer-base": (6, "sinusoidal", None), "gpt2": (12, "learned", None),
    "gpt2-medium": (24, "learned", None), "gpt2-large": (36, "learned", None),
    "gpt2-xl": (48, "learned", None), "bert-base": (12, "learned", None),
    "bert-large": (24, "learned", None), "gpt3-175b": (96, "learned", None),
    "llama2-7b": (32, "rope", None), "llama2-70b": (80, "rope", None), "llama3-8b": (32, "rope", None),
    "mistral-7b": (32, "rope", 4096), "falcon-7b": (32, "rope", None),
    "deepseek-v2-lite": (27, "rope", None), "deepseek-v3": (61, "rope", None),
    "gemma3-270m": (18, "rope", 512),  # its first layer is a local one: sliding_window 512
    "smollm2-135m": (30, "rope", None),
}


def test_every_preset_has_an_expected_count():
    assert set(PRESETS) == set(EXPECTED) == set(PUBLISHED) == set(PUBLISHED_LAYOUT)


@pytest.mark.parametrize("key", sorted(PUBLISHED_LAYOUT))
def test_preset_layers_positions_and_window(key):
    preset = get_preset(key)
    cfg = preset.apply(MHAConfig())
    assert (preset.layers, cfg.positions, cfg.window) == PUBLISHED_LAYOUT[key]


@pytest.mark.parametrize("key", sorted(PUBLISHED_MLA))
def test_mla_preset_fields_match_published_config(key):
    cfg = get_preset(key).apply(MHAConfig())
    assert cfg.mla and cfg.variant == "MLA"
    got = (cfg.q_lora_rank, cfg.kv_lora_rank, cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim)
    assert got == PUBLISHED_MLA[key]


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_preset_parameter_count(key):
    cfg = get_preset(key).apply(MHAConfig())
    assert param_plan(cfg).total == EXPECTED[key]


@pytest.mark.parametrize("key", sorted(PUBLISHED))
def test_preset_matches_published_config(key):
    cfg = get_preset(key).apply(MHAConfig())
    assert (cfg.d_model, cfg.H, cfg.Hkv, cfg.bias) == PUBLISHED[key]


def _linear(i: int, o: int, bias: bool) -> nn.Module:
    return nn.Linear(i, o, bias=bias, device="meta")


def checkpoint_modules(key: str) -> list[nn.Module]:
    """The attention modules of one layer, shaped as each family's code builds them."""
    D, H, Hkv, bias = PUBLISHED[key]
    kv = Hkv * (D // H)
    if key == "transformer-base" or key.startswith("bert"):
        # torch's own MHA for the 2017 layer; BERT's query/key/value/output.dense
        return [nn.MultiheadAttention(D, H, bias=bias, device="meta")]
    if key.startswith("gpt"):
        # GPT-2/3 c_attn: one Conv1D D -> 3·D with bias, c_proj D -> D with bias
        # (a Conv1D of nx -> nf has the parameters of a Linear(nx, nf))
        return [_linear(D, 3 * D, True), _linear(D, D, True)]
    if key in PUBLISHED_MLA:
        r_q, r_kv, nope, rope, v = PUBLISHED_MLA[key]
        q = ([_linear(D, H * (nope + rope), False)] if r_q is None else
             [_linear(D, r_q, False), nn.RMSNorm(r_q, device="meta"), _linear(r_q, H * (nope + rope), False)])
        # kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj
        return q + [_linear(D, r_kv + rope, False), nn.RMSNorm(r_kv, device="meta"),
                    _linear(r_kv, H * (nope + v), False), _linear(H * v, D, False)]
    if key == "gemma3-270m":
        # q_proj, k_proj, v_proj, o_proj with 256-wide heads; input_layernorm, q_norm, k_norm
        width = 256
        return [_linear(D, H * width, False), _linear(D, Hkv * width, False), _linear(D, Hkv * width, False),
                _linear(H * width, D, False), nn.RMSNorm(D, device="meta"), nn.RMSNorm(width, device="meta"),
                nn.RMSNorm(width, device="meta")]
    if key == "smollm2-135m":
        # LlamaAttention's four projections without bias, and the layer's input_layernorm
        return [_linear(D, D, False), _linear(D, kv, False), _linear(D, kv, False), _linear(D, D, False),
                nn.RMSNorm(D, device="meta")]
    if key == "falcon-7b":
        # query_key_value fuses Q and the single K/V head: D -> D + 2·64; dense D -> D
        return [_linear(D, D + 2 * kv, False), _linear(D, D, False)]
    # LLaMA / Mistral: q_proj, k_proj, v_proj, o_proj without bias
    return [_linear(D, D, False), _linear(D, kv, False), _linear(D, kv, False), _linear(D, D, False)]


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_preset_count_equals_checkpoint_module_shapes(key):
    modules = checkpoint_modules(key)
    count = sum(p.numel() for m in modules for p in m.parameters())
    assert all(p.device.type == "meta" for m in modules for p in m.parameters())
    assert count == EXPECTED[key] == param_plan(get_preset(key).apply(MHAConfig())).total


def test_llama_projection_terms_match_module_shapes():
    # per term, not only the total: W_K is D × (Hkv·d_k) = 8192 × 1024 for LLaMA-2 70B
    terms = {t.name: t.count for t in param_plan(get_preset("llama2-70b").apply(MHAConfig())).terms}
    assert terms == {
        "W_Q": _linear(8192, 8192, False).weight.numel(),
        "W_K": _linear(8192, 1024, False).weight.numel(),
        "W_V": _linear(8192, 1024, False).weight.numel(),
        "W_O": _linear(8192, 8192, False).weight.numel(),
    }


def test_preset_keeps_the_persons_other_choices():
    base = MHAConfig(batch=3, seq=11, dtype="float16", seed=5)
    cfg = get_preset("mistral-7b").apply(base)
    assert (cfg.batch, cfg.seq, cfg.seed) == (3, 11, 5)
    assert cfg.dtype == "bfloat16"  # the dtype the model is stored in
    # an MHA preset after a GQA one: key/value heads follow the heads again
    assert get_preset("gpt2").apply(cfg).Hkv == 12


def test_switching_presets_clears_window_and_latent_sizes():
    cfg = get_preset("deepseek-v3").apply(get_preset("mistral-7b").apply(MHAConfig()))
    assert cfg.window is None and cfg.mla
    cfg = get_preset("llama3-8b").apply(cfg)
    assert not cfg.mla and cfg.kv_lora_rank is None and cfg.q_lora_rank is None and cfg.Hkv == 8


def test_whole_model_kv_cache_of_deepseek_v3():
    # 61 layers · (512 + 64) numbers · 2 bytes (bfloat16) = 70,272 bytes per token
    preset = get_preset("deepseek-v3")
    cfg = preset.apply(MHAConfig(batch=1, seq=1, dtype="bfloat16"))
    mla = next(r for r in kv_compare_rows(cfg, preset.layers) if r.variant == "MLA")
    assert mla.whole_model == 61 * (512 + 64) * 2 == 70_272


def test_unknown_preset_is_a_config_error_listing_the_choices():
    with pytest.raises(ConfigError) as info:
        get_preset("nope")
    assert info.value.field == "preset"
    assert "nope" in info.value.message and "llama3-8b" in info.value.message


def test_a_preset_applies_over_any_mask_and_clears_what_it_does_not_have():
    # globals need a window or a stride; a preset without either must not leave them behind
    cfg = MHAConfig(seq=16, causal=True, window=4, stride=2, global_tokens=1)
    for key in PRESETS:
        applied = get_preset(key).apply(cfg)
        assert (applied.stride, applied.global_tokens) == (None, 0)
        assert applied.window == PRESETS[key].window
