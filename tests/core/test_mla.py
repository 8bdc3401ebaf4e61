"""Latent attention computes what the DeepSeek papers write, in both forms.

The reference below is written from the formulas, head by head and token pair by
token pair in float64, sharing no code with the engine: RMSNorm, the [nope | rope]
split, RoPE as a 2×2 rotation of each pair, softmax by hand.
"""

from __future__ import annotations

import math

import pytest
import torch

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.variants.latent.compute import absorbed_output_weight, make_mla_weights, mla_forward
from mha_explorer.core.variants.latent.dims import mla_dims
from mha_explorer.core.variants.latent.stages import mla_absorbed_stages, mla_stages


def _rms(v: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    return v / torch.sqrt((v * v).mean() + 1e-6) * g


def _rotate(v: torch.Tensor, pos: int) -> torch.Tensor:
    """Turn the pair (v_i, v_{i+d/2}) by pos·10000^(−2i/d), one pair at a time."""
    d = v.shape[0]
    out = v.clone()
    for i in range(d // 2):
        a = pos * 10000.0 ** (-2 * i / d)
        out[i] = v[i] * math.cos(a) - v[i + d // 2] * math.sin(a)
        out[i + d // 2] = v[i + d // 2] * math.cos(a) + v[i] * math.sin(a)
    return out


def reference(cfg: MHAConfig, x, xkv, w, visible=None):
    m = mla_dims(cfg)
    B, T, S = x.shape[0], x.shape[1], xkv.shape[1]
    off = cfg.mask_spec.offset(T, S)
    bias = (lambda n: w[n + ".bias"]) if cfg.bias else (lambda n: 0.0)
    y = torch.zeros(B, T, cfg.d_model, dtype=torch.float64)
    for b in range(B):
        if m.q_lora_rank is None:
            qs = [w["q_proj"] @ x[b, t] for t in range(T)]
        else:
            qs = [w["q_b_proj"] @ _rms(w["q_a_proj"] @ x[b, t] + bias("q_a_proj"), w["q_a_layernorm"])
                  for t in range(T)]
        lat = [w["kv_a_proj_with_mqa"] @ xkv[b, s] + bias("kv_a_proj_with_mqa") for s in range(S)]
        cs = [_rms(a[: m.kv_lora_rank], w["kv_a_layernorm"]) for a in lat]
        krs = [a[m.kv_lora_rank:] for a in lat]
        heads = []
        for h in range(m.H):
            block = w["kv_b_proj"][h * (m.nope + m.v):(h + 1) * (m.nope + m.v)]
            w_k, w_v = block[: m.nope], block[m.nope:]
            ctx = torch.zeros(T, m.v, dtype=torch.float64)
            for t in range(T):
                q = qs[t][h * m.qk:(h + 1) * m.qk]
                q_n, q_r = q[: m.nope], q[m.nope:]
                if cfg.positions == "rope":
                    q_r = _rotate(q_r, t + off)
                logits = []
                for s in range(S):
                    k_r = _rotate(krs[s], s) if cfg.positions == "rope" else krs[s]
                    ok = visible is None or bool(visible[t, s])
                    logit = (q_n @ (w_k @ cs[s]) + q_r @ k_r) / math.sqrt(m.qk)
                    logits.append(logit if ok else torch.tensor(-math.inf, dtype=torch.float64))
                e = torch.exp(torch.stack(logits) - max(logits))
                p = e / e.sum()
                ctx[t] = sum(p[s] * (w_v @ cs[s]) for s in range(S))
            heads.append(ctx)
        merged = torch.cat(heads, dim=1)  # [T, H·d_v], head by head
        y[b] = merged @ w["o_proj"].T + bias("o_proj")
    return y


CASES = {
    "plain query, no rope": dict(d_model=32, n_heads=4, seq=5, mla=True),
    "query latent, rope, causal, bias": dict(d_model=32, n_heads=2, seq=6, mla=True, q_lora_rank=12,
                                             positions="rope", causal=True, bias=True),
    "odd sizes, cross, bottom-right": dict(d_model=24, n_heads=3, seq=3, kv_seq=5, mla=True,
                                          kv_lora_rank=10, qk_nope_head_dim=5, qk_rope_head_dim=4,
                                          v_head_dim=7, positions="rope", causal=True,
                                          causal_alignment="bottom-right"),
    "window and global": dict(d_model=16, n_heads=2, seq=7, mla=True, causal=True, window=2,
                              global_tokens=1, positions="rope", bias=False),
}


def _setup(kw):
    cfg = MHAConfig(**kw)
    w = {k: v.double() for k, v in make_mla_weights(cfg).items()}
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, cfg.T, cfg.d_model, generator=g, dtype=torch.float64)
    xkv = torch.randn(2, cfg.S, cfg.d_model, generator=g, dtype=torch.float64) if cfg.is_cross else x
    vis = cfg.mask_spec.visible(0, cfg.T, cfg.T, cfg.S)
    return cfg, w, x, xkv, None if vis is None else torch.from_numpy(vis)


@pytest.mark.parametrize("absorbed", [False, True], ids=["naive", "absorbed"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_mla_output_equals_per_head_reference(case, absorbed):
    cfg, w, x, xkv, vis = _setup(CASES[case])
    got = mla_forward(cfg, x, xkv, w, visible=vis, absorbed=absorbed)["output"]["Y"]
    torch.testing.assert_close(got, reference(cfg, x, xkv, w, vis), rtol=1e-10, atol=1e-10)


def test_forgetting_the_norm_scale_would_change_the_output():
    # the reference notices the latent's RMSNorm weight: a wrong one gives another answer
    cfg, w, x, xkv, vis = _setup(CASES["plain query, no rope"])
    wrong = dict(w, kv_a_layernorm=torch.ones_like(w["kv_a_layernorm"]))
    assert not torch.allclose(mla_forward(cfg, x, xkv, wrong)["output"]["Y"], reference(cfg, x, xkv, w))


def test_absorbed_scores_equal_naive_scores_and_never_build_per_head_keys():
    cfg, w, x, xkv, vis = _setup(CASES["query latent, rope, causal, bias"])
    naive = mla_forward(cfg, x, xkv, w, visible=vis)
    absorbed = mla_forward(cfg, x, xkv, w, visible=vis, absorbed=True)
    torch.testing.assert_close(absorbed["scores"]["scores"], naive["scores"]["scores"])
    assert "kv_expand" not in absorbed and "K_nope" not in absorbed["heads"]


def test_folded_output_weight_is_w_o_times_w_uv():
    cfg = MHAConfig(d_model=16, n_heads=2, mla=True, kv_lora_rank=6, v_head_dim=3)
    m, w = mla_dims(cfg), make_mla_weights(cfg)
    folded = absorbed_output_weight(m, w)
    for h in range(2):
        w_uv = w["kv_b_proj"][h * (m.nope + 3) + m.nope:(h + 1) * (m.nope + 3)]  # [d_v, r_kv]
        w_o = w["o_proj"][:, h * 3:(h + 1) * 3]  # [D, d_v]
        torch.testing.assert_close(folded[:, h * 6:(h + 1) * 6], w_o @ w_uv)


@pytest.mark.parametrize("absorbed", [False, True], ids=["naive", "absorbed"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_plan_shapes_are_the_shapes_that_run(case, absorbed):
    cfg, w, x, xkv, vis = _setup(CASES[case])
    ran = mla_forward(cfg, x, xkv, w, visible=vis, absorbed=absorbed)
    stages = (mla_absorbed_stages if absorbed else mla_stages)(cfg)
    assert [s.id for s in stages] == list(ran)
    for stage in stages:
        for t in stage.tensors:
            tensor = ran[stage.id][t.name]
            assert tuple(tensor.shape) == t.shape, (stage.id, t.name)
            if not t.allocates:  # views: the strides the plan promises are torch's own
                assert tuple(tensor.stride()) == t.strides, (stage.id, t.name)


def test_plan_flops_written_out():
    # D 32, H 4, d_k 8 -> nope 8, rope 4, v 8, r_kv 32; B 2, T = S = 5, float32, no bias
    cfg = MHAConfig(d_model=32, n_heads=4, seq=5, mla=True, bias=False)
    naive = {s.id: s.flops for s in mla_stages(cfg)}
    assert naive["q_project"] == 2 * 2 * 5 * 32 * (4 * 12)  # X·W_Qᵀ, 32 -> 4 heads of 8+4
    assert naive["kv_compress"] == 2 * 2 * 5 * 32 * (32 + 4) + 4 * 2 * 5 * 32  # + RMSNorm
    assert naive["kv_expand"] == 2 * 2 * 5 * 32 * (4 * (8 + 8))
    assert naive["scores"] == 2 * 2 * 4 * 5 * 5 * 12 + 2 * 4 * 5 * 5
    assert naive["weighted_sum"] == 2 * 2 * 4 * 5 * 5 * 8
    assert naive["output"] == 2 * 2 * 5 * (4 * 8) * 32
    absorbed = {s.id: s.flops for s in mla_absorbed_stages(cfg)}
    assert absorbed["absorb_q"] == 2 * 2 * 4 * 5 * 8 * 32  # q_nope (8) -> latent (32), per head
    assert absorbed["scores"] == 2 * 2 * 4 * 5 * 5 * (32 + 4) + 2 * 4 * 5 * 5
    assert absorbed["weighted_sum"] == 2 * 2 * 4 * 5 * 5 * 32
    assert absorbed["output"] == 2 * 2 * 5 * (4 * 32) * 32  # W_OUV is H·r_kv wide
    assert "kv_expand" not in absorbed


def test_cached_pair_is_the_kv_compress_output():
    cfg = MHAConfig(d_model=32, n_heads=4, seq=5, mla=True, kv_lora_rank=20, qk_rope_head_dim=6)
    stage = next(s for s in mla_stages(cfg) if s.id == "kv_compress")
    assert [t.shape for t in stage.tensors] == [(2, 5, 20), (2, 5, 6)]
