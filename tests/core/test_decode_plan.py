"""The decode plan's numbers, against arithmetic written out here.

Per layer the cache holds K and V, [B, Hkv, S_t, d_k] each, at the dtype's
itemsize; under a window W it keeps min(S_t, W) tokens.
"""

from __future__ import annotations

import pytest

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.decode_plan import MAX_STEPS, cache_growth, decode_steps

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
