"""The RoPE base a config names is the one every path turns q and k with.

Latent attention (MLA) is compared, at three bases, with a reference written here from the
formulas: each pair (v_i, v_{i+d/2}) of the rope part turned by pos·base^(−2i/d), in float64,
sharing no code with the engine. Every way the app runs the family is checked: the engine's
trace, the absorbed form, decoding with the latent cache, the full pass ``decode --check``
compares decoding with, and the tiles. The grouped family's row and window modes (which
latent attention does not have: it is computed whole) are checked the same way.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.engine import runner as engine
from mha_explorer.core.engine.decode import compute_module, full_pass, layer_tensors, run_decode
from mha_explorer.core.engine.tiled import tiled_attention

BASES = (100, 10_000, 1_000_000)
ATOL = 1e-5  # fp32 against a float64 reference


def _turn(v: torch.Tensor, positions: torch.Tensor, base: float) -> torch.Tensor:
    """v [..., L, d] with each pair (i, i + d/2) of row l turned by positions[l]·base^(−2i/d)."""
    d = v.shape[-1]
    half = d // 2
    out = v.clone()
    for i in range(half):
        angle = positions.double() * base ** (-2 * i / d)  # [L]
        cos, sin = torch.cos(angle), torch.sin(angle)
        a, b = v[..., i], v[..., i + half]
        out[..., i] = a * cos - b * sin
        out[..., i + half] = b * cos + a * sin
    return out


def _rms(v: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    return v / torch.sqrt((v * v).mean(-1, keepdim=True) + 1e-6) * g


def mla_reference(cfg: MHAConfig, x: np.ndarray, w: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    """Per-head q, k [B, H, L, d_n + d_r], v [B, H, L, d_v], the context and Y, for self-attention
    with the config's mask; the rope parts turned with the config's own base."""
    x = torch.as_tensor(x, dtype=torch.float64)
    w = {k: torch.as_tensor(np.asarray(v), dtype=torch.float64) for k, v in w.items()}
    B, L, _ = x.shape
    H = cfg.H
    r = w["kv_a_layernorm"].shape[0]
    d_n = cfg.qk_nope_head_dim
    d_r = w["kv_a_proj_with_mqa"].shape[0] - r
    d_v = w["o_proj"].shape[1] // H
    if "q_proj" in w:
        q = x @ w["q_proj"].T
    else:
        q = _rms(x @ w["q_a_proj"].T, w["q_a_layernorm"]) @ w["q_b_proj"].T
    q = q.reshape(B, L, H, d_n + d_r).permute(0, 2, 1, 3)  # [B, H, L, d_n + d_r]
    lat = x @ w["kv_a_proj_with_mqa"].T  # [B, L, r + d_r]
    c, k_r = _rms(lat[..., :r], w["kv_a_layernorm"]), lat[..., r:]
    kv = (c @ w["kv_b_proj"].T).reshape(B, L, H, d_n + d_v).permute(0, 2, 1, 3)  # [B, H, L, d_n + d_v]
    pos = torch.arange(L)
    base = float(cfg.rope_base or 10_000)
    q_r = _turn(q[..., d_n:], pos, base)
    k_r = _turn(k_r, pos, base)[:, None].expand(B, H, L, d_r)
    q = torch.cat([q[..., :d_n], q_r], -1)
    k = torch.cat([kv[..., :d_n], k_r], -1)
    v = kv[..., d_n:]
    logits = q @ k.transpose(-1, -2) / math.sqrt(d_n + d_r)  # [B, H, L, L]
    visible = cfg.mask_spec.visible(0, L, L, L)
    if visible is not None:
        logits = logits.masked_fill(~torch.from_numpy(visible), -math.inf)
    ctx = torch.softmax(logits, -1) @ v  # [B, H, L, d_v]
    y = ctx.permute(0, 2, 1, 3).reshape(B, L, H * d_v) @ w["o_proj"].T
    return {"q": q, "k": k, "v": v, "context": ctx, "Y": y}


def _latent(base: int, **more) -> MHAConfig:
    fields = dict(d_model=32, n_heads=4, batch=2, seq=6, mla=True, positions="rope", causal=True,
                  q_lora_rank=12, kv_lora_rank=16, qk_nope_head_dim=6, qk_rope_head_dim=8,
                  v_head_dim=5, bias=False, rope_base=base)
    return MHAConfig(**{**fields, **more})


def _close(got, want) -> None:
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want), atol=ATOL, rtol=0)


@pytest.mark.parametrize("base", BASES)
def test_the_engine_trace_turns_with_the_base(base):
    trace = engine.run(_latent(base))
    want = mla_reference(trace.config, trace.tensors["input"]["X"], dict(trace.weights))
    _close(trace.output, want["Y"])
    _close(trace.tensors["rope"]["q_rope"], want["q"][..., 6:])


@pytest.mark.parametrize("base", BASES)
def test_the_absorbed_form_turns_with_the_base(base):
    cfg = _latent(base)
    tensors = layer_tensors(cfg)
    visible = torch.from_numpy(cfg.mask_spec.visible(0, cfg.T, cfg.T, cfg.S))
    ran = compute_module(cfg).mla_forward(cfg, tensors.x, tensors.x, tensors.weights, visible, absorbed=True)
    want = mla_reference(cfg, tensors.x.numpy(), {k: v.numpy() for k, v in tensors.weights.items()})
    _close(ran["output"]["Y"], want["Y"])


@pytest.mark.parametrize("base", BASES)
def test_decoding_and_its_check_turn_with_the_base(base):
    run = run_decode(_latent(base), prompt=3, steps=4)
    tensors = layer_tensors(run.config)
    want = mla_reference(run.config, tensors.x.numpy(), {k: v.numpy() for k, v in tensors.weights.items()})
    _close(full_pass(run.config), want["Y"])  # what decode --check compares the steps with
    for step in run.steps:
        p0, p1 = step.positions
        _close(step.output, want["Y"][:, p0:p1])


@pytest.mark.parametrize("base", BASES)
def test_the_tiles_turn_with_the_base(base):
    cfg = _latent(base)
    tensors = layer_tensors(cfg)
    q, k, v = compute_module(cfg).attention_inputs(cfg, tensors)
    want = mla_reference(cfg, tensors.x.numpy(), {k_: t.numpy() for k_, t in tensors.weights.items()})
    _close(q, want["q"])
    _close(k, want["k"])
    _close(tiled_attention(q, k, v, cfg.mask_spec, (2, 4)), want["context"])


def test_the_bases_give_different_maps():
    # the reference's own check: at these sizes the base changes what the heads see
    maps = [engine.run(_latent(base)).tensors["softmax"]["weights"] for base in BASES]
    assert not np.allclose(maps[0], maps[1], atol=1e-3) and not np.allclose(maps[1], maps[2], atol=1e-3)


def grouped_reference(cfg: MHAConfig, x: np.ndarray, w: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    """The softmax maps [B, H, L, L] and Y of plain multi-head attention with RoPE at the
    config's base (self-attention, no bias, no mask), for whichever sequences ``x`` holds."""
    x = torch.as_tensor(x, dtype=torch.float64)
    w = {k: torch.as_tensor(np.asarray(v), dtype=torch.float64) for k, v in w.items()}
    B, L, D = x.shape
    H, d = cfg.H, cfg.d_k

    def heads(t: torch.Tensor) -> torch.Tensor:
        return t.reshape(B, L, H, d).permute(0, 2, 1, 3)  # [B, H, L, d]

    pos, base = torch.arange(L), float(cfg.rope_base or 10_000)
    q = _turn(heads(x @ w["W_Q"].T), pos, base)
    k = _turn(heads(x @ w["W_K"].T), pos, base)
    maps = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), -1)
    y = (maps @ heads(x @ w["W_V"].T)).permute(0, 2, 1, 3).reshape(B, L, D) @ w["W_O"].T
    return {"maps": maps, "Y": y}


@pytest.mark.parametrize("mode", ["full", "windowed", "rows"])
@pytest.mark.parametrize("base", BASES)
def test_the_grouped_modes_turn_with_the_base(base, mode):
    cfg = MHAConfig(d_model=32, n_heads=4, batch=2, seq=6, positions="rope", bias=False, rope_base=base)
    trace = engine.run(cfg, mode=mode, show_batch=1)
    want = grouped_reference(cfg, trace.tensors["input"]["X"], dict(trace.weights))
    if mode == "rows":  # only the picked query rows, up to the softmax
        _close(trace.tensors["softmax"]["weights"], want["maps"][:, :, list(trace.row_ids)])
    else:
        _close(trace.output, want["Y"])
