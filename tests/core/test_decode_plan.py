"""The decode plan's numbers, against arithmetic written out here.

Per layer the cache holds K and V, [B, Hkv, S_t, d_k] each, at the dtype's
itemsize; under a window W it keeps min(S_t, W) tokens.
"""

from __future__ import annotations

import pytest

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.plan.decode import MAX_STEPS, cache_growth, decode_steps

VARIANTS = {
    "MHA": MHAConfig(d_model=64, n_heads=8, batch=3),
    "GQA": MHAConfig(d_model=64, n_heads=8, n_kv_heads=2, batch=3),
    "MQA": MHAConfig(d_model=64, n_heads=8, n_kv_heads=1, batch=3, dtype="bfloat16"),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_cache_grows_by_one_token_of_k_and_v_per_step(name):
    cfg = VARIANTS[name]
    itemsize = {"float32": 4, "bfloat16": 2}[cfg.dtype]
    hkv = {"MHA": 8, "GQA": 2, "MQA": 1}[name]
    d_k = 64 // 8
    steps = decode_steps(cfg, prompt=5, steps=4, layers=12)
    assert [s.step for s in steps] == [0, 1, 2, 3, 4]
    assert [s.cache_tokens for s in steps] == [5, 6, 7, 8, 9]
    for s in steps:
        assert s.cache_shape == [3, hkv, s.cache_tokens, d_k]
        assert s.cache_bytes == 2 * 3 * hkv * s.cache_tokens * d_k * itemsize  # K and V
        assert s.model_cache_bytes == 12 * s.cache_bytes
    # each generated token adds the same amount: one row of K and V per kv head
    growth = {b.cache_bytes - a.cache_bytes for a, b in zip(steps, steps[1:], strict=False)}
    assert growth == {2 * 3 * hkv * d_k * itemsize}


def test_gqa_and_mqa_shrink_the_cache_by_the_group_size():
    mha, gqa, mqa = (decode_steps(VARIANTS[n], 16, 1)[-1].cache_bytes for n in ("MHA", "GQA", "MQA"))
    assert mha == 4 * gqa  # 8 heads share 2 kv heads
    assert mha == 8 * mqa * 2  # one kv head, and bfloat16 halves it again


def test_a_window_keeps_a_rolling_cache():
    cfg = MHAConfig(d_model=32, n_heads=4, batch=1, window=6)
    steps = decode_steps(cfg, prompt=4, steps=5)
    assert [s.seen_tokens for s in steps] == [4, 5, 6, 7, 8, 9]
    assert [s.cache_tokens for s in steps] == [4, 5, 6, 6, 6, 6]
    assert [s.keys_scored for s in steps] == [4, 5, 6, 6, 6, 6]
    assert steps[-1].cache_bytes == 2 * 1 * 4 * 6 * 8 * 4


def test_the_prompt_pass_scores_every_prompt_key_even_under_a_shorter_window():
    steps = decode_steps(MHAConfig(d_model=32, n_heads=4, window=3), prompt=10, steps=1)
    assert steps[0].keys_scored == 10 and steps[0].cache_tokens == 3


def test_step_flops_written_out():
    # D 64, H 8, Hkv 2, d_k 8, B 3, bias on: the prompt pass of 5 and one step over 6 keys
    cfg = VARIANTS["GQA"]
    B, D, kvD, H, dk = 3, 64, 16, 8, 8

    def flops(n, keys):
        project = 2 * B * n * D * D + 2 * 2 * B * n * D * kvD + B * n * D + 2 * B * n * kvD
        scores = 2 * B * H * n * keys * dk + B * H * n * keys
        softmax = 5 * B * H * n * keys
        weighted = 2 * B * H * n * keys * dk
        output = 2 * B * n * D * D + B * n * D
        return project + scores + softmax + weighted + output

    steps = decode_steps(cfg, prompt=5, steps=1)
    assert steps[0].flops == flops(5, 5)
    assert steps[1].flops == flops(1, 6)


def test_step_bytes_read_every_weight_and_the_whole_cache():
    cfg = MHAConfig(d_model=64, n_heads=8, n_kv_heads=2, batch=1, bias=False)
    step = decode_steps(cfg, prompt=3, steps=1)[1]  # one token over 4 keys
    weights = (2 * 64 * 64 + 2 * 64 * 16) * 4
    cache_read = 2 * 2 * 4 * 8 * 4  # K and V, 2 kv heads, 4 keys, d_k 8, float32
    cache_written = 2 * 2 * 1 * 8 * 4
    io = 2 * 64 * 4
    score_row = 2 * 8 * 4 * 4  # scores and weights, 8 heads × 4 keys
    assert step.bytes == weights + cache_read + cache_written + io + score_row
    assert step.flops / step.bytes < 1  # decoding one token is bound by memory


def test_no_layer_count_gives_no_model_total():
    assert decode_steps(VARIANTS["MHA"], 2, 1)[0].model_cache_bytes is None


@pytest.mark.parametrize("prompt, steps", [(0, 3), (3, 0), (-1, 2), (2, MAX_STEPS + 1)])
def test_bad_prompt_or_steps_is_a_config_error(prompt, steps):
    with pytest.raises(ConfigError):
        decode_steps(VARIANTS["MHA"], prompt, steps)


def test_cache_growth_side_by_side_grows_at_the_kv_head_rates():
    cfg = MHAConfig(d_model=64, n_heads=8, n_kv_heads=2, batch=1, window=4)
    growth = cache_growth(cfg, [1, 2, 8])
    per_token = 2 * 8 * 4  # K and V, d_k 8, float32, per kv head
    assert growth["MHA (Hkv=8)"] == [8 * per_token * s for s in (1, 2, 8)]
    assert growth["GQA (Hkv=2)"] == [2 * per_token * s for s in (1, 2, 8)]
    assert growth["MQA (Hkv=1)"] == [1 * per_token * s for s in (1, 2, 8)]
    assert growth["GQA window 4"] == [2 * per_token * s for s in (1, 2, 4)]


def test_latent_cache_holds_the_latent_and_the_rope_key_per_token():
    # D 64, H 8 → d_k 8: by the documented defaults r_kv = 4·8 = 32 and d_r = 8 / 2 = 4
    cfg = MHAConfig(d_model=64, n_heads=8, batch=2, mla=True, dtype="bfloat16")
    steps = decode_steps(cfg, prompt=3, steps=2, layers=5)
    for s in steps:
        assert s.cache_shape == [2, s.cache_tokens, 32 + 4]
        assert s.cache_bytes == 2 * (32 + 4) * 2 * s.cache_tokens
        assert s.model_cache_bytes == 5 * s.cache_bytes
    # set ranks are used as given, and a window keeps min(S_t, W) tokens of them
    cfg = MHAConfig(d_model=64, n_heads=8, batch=1, mla=True, kv_lora_rank=24, qk_rope_head_dim=6, window=4)
    steps = decode_steps(cfg, prompt=3, steps=3)
    assert [s.cache_tokens for s in steps] == [3, 4, 4, 4]
    assert [s.cache_bytes for s in steps] == [(24 + 6) * 4 * k for k in (3, 4, 4, 4)]
    mha = decode_steps(cfg.replace(mla=False, kv_lora_rank=None, qk_rope_head_dim=None), 3, 3)
    assert mha[-1].cache_bytes == 2 * 8 * 4 * 8 * 4  # K and V of 8 heads: more than the latent


def test_latent_step_flops_written_out_in_the_absorbed_form():
    # D 64, H 8, B 2, r_q 16, bias, RoPE; r_kv 32, d_n 8, d_r 4 by default
    cfg = MHAConfig(d_model=64, n_heads=8, batch=2, mla=True, q_lora_rank=16, bias=True, positions="rope")
    B, D, H, rq, r, dn, dr = 2, 64, 8, 16, 32, 8, 4

    def flops(n, keys):
        query = 2 * B * n * D * rq + 4 * B * n * rq + B * n * rq + 2 * B * n * rq * H * (dn + dr)
        compress = 2 * B * n * D * (r + dr) + 4 * B * n * r + B * n * (r + dr)  # new tokens only
        rope = 3 * (B * H * n * dr + B * n * dr)
        absorb = 2 * B * H * n * dn * r  # q_nope · W_UK, per head
        scores = 2 * B * H * n * keys * (r + dr) + B * H * n * keys  # over [c_KV | k_rope], scaled
        softmax = 5 * B * H * n * keys
        latent_sum = 2 * B * H * n * keys * r  # weights · c_KV
        output = 2 * B * n * H * r * D + B * n * D  # W_OUV: W_UV folded into W_O
        return query + compress + rope + absorb + scores + softmax + latent_sum + output

    steps = decode_steps(cfg, prompt=5, steps=2)
    assert [s.flops for s in steps] == [flops(5, 5), flops(1, 6), flops(1, 7)]


def test_latent_step_reads_the_absorbed_weights():
    cfg = MHAConfig(d_model=64, n_heads=8, batch=1, mla=True, bias=False)  # a plain query projection
    D, H, r, dn, dr = 64, 8, 32, 8, 4
    # q_proj, kv_a_proj_with_mqa, its norm, W_UK (half of kv_b_proj), W_OUV [D, H·r_kv]
    weights = D * H * (dn + dr) + D * (r + dr) + r + H * dn * r + D * H * r
    step = decode_steps(cfg, prompt=2, steps=1)[1]  # one token over 3 cached tokens
    assert step.byte_terms["weights"] == weights * 4
    assert step.byte_terms["cache read"] == (r + dr) * 3 * 4


def test_cache_growth_puts_latent_attention_beside_its_plain_siblings():
    cfg = MHAConfig(d_model=64, n_heads=8, batch=1, mla=True, kv_lora_rank=24, qk_rope_head_dim=6)
    growth = cache_growth(cfg, [1, 4])
    assert growth["MHA (Hkv=8)"] == [2 * 8 * 8 * 4 * s for s in (1, 4)]
    assert growth["MQA (Hkv=1)"] == [2 * 8 * 4 * s for s in (1, 4)]
    assert growth["MLA"] == [(24 + 6) * 4 * s for s in (1, 4)]
    windowed = cache_growth(cfg.replace(window=2), [1, 4])
    assert windowed["MLA window 2"] == [(24 + 6) * 4 * s for s in (1, 2)]
