"""The grouped family's own fields, as Gemma 3 uses them: heads wider than D / H, RMSNorm on the
input and on each head's q and k, and a RoPE base of one's choosing, checked against a
computation written out independently with torch's SDPA."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mha_explorer import cli
from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.engine import runner as engine
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.text.reference_code import reference_code

GEMMA_LIKE = MHAConfig(d_model=40, n_heads=4, n_kv_heads=1, head_dim=16, norms=True, bias=False,
                       positions="rope", rope_base=1_000_000, causal=True, window=3, seq=7, batch=2,
                       device="cpu")


def _rms(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def _rope(x: torch.Tensor, base: float) -> torch.Tensor:
    """x [B, heads, L, d] turned pair (i, i + d/2) by position p times base^(-2i/d)."""
    L, d = x.shape[-2], x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # [d/2]
    angle = torch.arange(L, dtype=torch.float64)[:, None] * theta[None]  # [L, d/2]
    cos, sin = angle.cos().float(), angle.sin().float()
    a, b = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


def _independent(cfg: MHAConfig, trace) -> np.ndarray:
    w = {k: torch.from_numpy(np.asarray(trace.weights[k])) for k in trace.weights}
    x = torch.from_numpy(trace.tensors["input"]["X"])  # [B, T, D]
    B, T, H, Hkv, dk = x.shape[0], cfg.T, cfg.H, cfg.Hkv, cfg.d_k
    h = _rms(x, w["norm"])
    q = (h @ w["W_Q"].T).view(B, T, H, dk).transpose(1, 2)  # [B, H, T, d_k]
    k = (h @ w["W_K"].T).view(B, T, Hkv, dk).transpose(1, 2)  # [B, Hkv, T, d_k]
    v = (h @ w["W_V"].T).view(B, T, Hkv, dk).transpose(1, 2)
    q, k = _rope(_rms(q, w["q_norm"]), cfg.rope_base), _rope(_rms(k, w["k_norm"]), cfg.rope_base)
    i, j = torch.arange(T)[:, None], torch.arange(T)[None]
    mask = (j <= i) & (i - j < cfg.window)  # causal, the last W keys
    ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)  # [B, H, T, d_k]
    return (ctx.transpose(1, 2).reshape(B, T, H * dk) @ w["W_O"].T).numpy()  # [B, T, D]


def test_wide_heads_norms_and_a_rope_base_equal_an_independent_pass():
    trace = engine.run(GEMMA_LIKE, mode="full")
    np.testing.assert_allclose(trace.output, _independent(GEMMA_LIKE, trace), atol=1e-5, rtol=0)
    assert trace.tensors["project"]["Q"].shape == (2, 7, 4 * 16)  # H·d_k = 64 wide, not D = 40
    assert trace.tensors["merge"]["merged"].shape == (2, 7, 64)
    assert {"norm", "qk_norm", "rope"} <= set(build_plan(GEMMA_LIKE).stage_ids)


def test_the_listing_runs_and_gives_the_engines_output():
    trace = engine.run(GEMMA_LIKE, mode="full")
    namespace: dict = {}
    exec(reference_code(GEMMA_LIKE), namespace)  # the text the stage view shows
    w = {k: torch.from_numpy(np.asarray(trace.weights[k])) for k in trace.weights}
    x = torch.from_numpy(trace.tensors["input"]["X"])
    y = namespace["attention"](x, x, w["W_Q"], None, w["W_K"], None, w["W_V"], None, w["W_O"], None,
                               w["norm"], w["q_norm"], w["k_norm"], n_heads=4, n_kv_heads=1, d_k=16)
    np.testing.assert_allclose(y.numpy(), trace.output, atol=1e-5, rtol=0)


def test_the_parameter_count_is_the_weights_the_engine_holds():
    trace = engine.run(GEMMA_LIKE, mode="full")
    plan = build_plan(GEMMA_LIKE)
    assert plan.params.total == sum(np.asarray(trace.weights[k]).size for k in trace.weights)
    # Gemma 3 270M's own attention: 640 × 1024 + 2 · 640 × 256 + 1024 × 640 + 640 + 2 · 256
    gemma = MHAConfig(d_model=640, n_heads=4, n_kv_heads=1, head_dim=256, norms=True, bias=False)
    assert build_plan(gemma).params.total == 1_639_552


def test_the_fields_belong_to_their_family_and_say_so():
    with pytest.raises(ConfigError) as err:
        MHAConfig(mla=True, head_dim=64)
    assert err.value.field == "head_dim" and {"head_dim": None} in err.value.suggestions
    with pytest.raises(ConfigError, match="RoPE base"):
        MHAConfig(rope_base=1)


def test_the_command_line_offers_them(capsys):
    assert cli.main(["shapes", "--d-model", "640", "--heads", "4", "--kv-heads", "1", "--head-dim", "256",
                     "--rms-norms", "--no-bias", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"head_dim": 256' in out and '"norms": true' in out
    assert cli.main(["shapes", "--attention", "mla", "--head-dim", "64"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "head_dim" in err


LLAMA_LIKE = MHAConfig(d_model=48, n_heads=6, n_kv_heads=2, input_norm=True, bias=False, positions="rope",
                       rope_base=100_000, causal=True, seq=5, batch=2, device="cpu")


def test_an_input_norm_alone_normalises_x_and_not_q_or_k():
    """Llama-style: RMSNorm on the layer's input only; its scale the one extra parameter."""
    plan = build_plan(LLAMA_LIKE)
    assert "norm" in plan.stage_ids and "qk_norm" not in plan.stage_ids
    trace = engine.run(LLAMA_LIKE, mode="full")
    w = {k: torch.from_numpy(np.asarray(trace.weights[k])) for k in trace.weights}
    assert set(w) == {"W_Q", "W_K", "W_V", "W_O", "norm"}
    x = torch.from_numpy(trace.tensors["input"]["X"])  # [B, T, D]
    B, T, H, Hkv, dk = 2, 5, 6, 2, 8
    h = _rms(x, w["norm"])
    np.testing.assert_allclose(trace.tensors["norm"]["X"], h.numpy(), atol=1e-6)
    q = _rope((h @ w["W_Q"].T).view(B, T, H, dk).transpose(1, 2), 100_000)  # [B, H, T, d_k]
    k = _rope((h @ w["W_K"].T).view(B, T, Hkv, dk).transpose(1, 2), 100_000)  # [B, Hkv, T, d_k]
    v = (h @ w["W_V"].T).view(B, T, Hkv, dk).transpose(1, 2)
    ctx = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)  # [B, H, T, d_k]
    np.testing.assert_allclose(trace.output, (ctx.transpose(1, 2).reshape(B, T, H * dk) @ w["W_O"].T).numpy(),
                               atol=1e-5, rtol=0)
    assert plan.params.total == sum(np.asarray(trace.weights[k]).size for k in trace.weights)
    assert plan.params.total == build_plan(LLAMA_LIKE.replace(input_norm=False)).params.total + 48


def test_a_trained_models_norm_uses_its_own_epsilon():
    from mha_explorer.core.models.catalog import MODELS

    for model in MODELS.values():
        cfg = MHAConfig(weights=model.key, **_shape_of(model))
        assert cfg.norm_eps == (model.decoder.rms_eps if model.decoder else 1e-6)
    smollm2 = MHAConfig(weights="smollm2-135m", **_shape_of(MODELS["smollm2-135m"]))
    assert "eps 1e-5" in reference_code(smollm2)


def _shape_of(model) -> dict:
    from mha_explorer.core.config.rules import trained_fields

    words = ["one", "two"]
    return {**trained_fields(model, 1), "tokens": tuple(words), "seq": len(words), "device": "cpu"}
