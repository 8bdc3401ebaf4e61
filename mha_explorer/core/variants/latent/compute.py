"""Multi-head latent attention in torch, naive and absorbed, returning every stage's tensors.

Weights use the checkpoints' module names in nn.Linear layout (out × in): "q_proj" or
"q_a_proj", "q_a_layernorm", "q_b_proj"; "kv_a_proj_with_mqa", "kv_a_layernorm",
"kv_b_proj", "o_proj"; a bias, where the config has one, as "<name>.bias" on q_a_proj,
kv_a_proj_with_mqa and o_proj. The stage ids match core/mla_stages.py.

RoPE is the rotate-half form (as LLaMA) on the decoupled parts, only when the config's
positions are "rope"; the released DeepSeek weights expect an interleaved layout, which
differs by a fixed permutation of the rope numbers and not in what is computed.
"""

from __future__ import annotations

import math
import zlib

import torch
import torch.nn.functional as F

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.kernels.masks import attend
from mha_explorer.core.kernels.positions import apply_rope, query_key_positions
from mha_explorer.core.variants.latent.dims import MLADims, mla_dims
from mha_explorer.core.variants.latent.stages import ABSORBED_STAGE_IDS, NAIVE_STAGE_IDS

RMS_EPS = 1e-6  # DeepSeek's rms_norm_eps
NORM_SPREAD = 0.1  # random norm scales around 1, so a forgotten norm shows in the tests

Stages = dict[str, dict[str, torch.Tensor]]


def mla_weight_shapes(cfg: MHAConfig) -> dict[str, tuple[int, ...]]:
    """Every parameter of the block by name, as the checkpoints shape it."""
    m = mla_dims(cfg)
    if m.q_lora_rank is None:
        shapes: dict[str, tuple[int, ...]] = {"q_proj": (m.H * m.qk, m.D)}
    else:
        shapes = {"q_a_proj": (m.q_lora_rank, m.D), "q_a_layernorm": (m.q_lora_rank,),
                  "q_b_proj": (m.H * m.qk, m.q_lora_rank)}
    shapes.update({
        "kv_a_proj_with_mqa": (m.cached_width, m.D), "kv_a_layernorm": (m.kv_lora_rank,),
        "kv_b_proj": (m.H * (m.nope + m.v), m.kv_lora_rank), "o_proj": (m.D, m.H * m.v),
    })
    if cfg.bias:
        for name in ("q_a_proj", "kv_a_proj_with_mqa", "o_proj"):
            if name in shapes:
                shapes[f"{name}.bias"] = (shapes[name][0],)
    return shapes


def make_mla_weights(cfg: MHAConfig) -> dict[str, torch.Tensor]:
    """Deterministic float32 weights on the CPU: linear maps ~ N(0, 1/fan_in), norm scales ~ 1."""
    out = {}
    for i, (name, shape) in enumerate(mla_weight_shapes(cfg).items()):
        g = torch.Generator()
        g.manual_seed(zlib.crc32(repr((cfg.seed, "mla", i)).encode()))
        noise = torch.randn(shape, generator=g)
        if name.endswith("layernorm"):
            out[name] = 1.0 + NORM_SPREAD * noise
        elif name.endswith(".bias"):
            out[name] = NORM_SPREAD * noise
        else:
            out[name] = noise / math.sqrt(shape[1])
    return out


def _rms_norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return F.rms_norm(x, (x.shape[-1],), weight, RMS_EPS)


def _project(cfg: MHAConfig, m: MLADims, x: torch.Tensor, x_kv: torch.Tensor,
             w: dict[str, torch.Tensor], st: Stages) -> tuple[torch.Tensor, ...]:
    """q_project, kv_compress, the query's heads and RoPE: what both forms share."""
    nb, T, S = x.shape[0], x.shape[1], x_kv.shape[1]
    if m.q_lora_rank is None:
        q = F.linear(x, w["q_proj"])  # [nb, T, H·(d_n+d_r)]
        st["q_project"] = {"Q": q}
    else:
        c_q = F.linear(x, w["q_a_proj"], w.get("q_a_proj.bias"))  # [nb, T, r_q]
        c_q = _rms_norm(c_q, w["q_a_layernorm"])
        q = F.linear(c_q, w["q_b_proj"])  # [nb, T, H·(d_n+d_r)]
        st["q_project"] = {"c_Q": c_q, "Q": q}
    kv_a = F.linear(x_kv, w["kv_a_proj_with_mqa"], w.get("kv_a_proj_with_mqa.bias"))  # [nb, S, r_kv+d_r]
    c_kv, k_rope = kv_a.split([m.kv_lora_rank, m.rope], dim=-1)  # [nb, S, r_kv], [nb, S, d_r]
    c_kv = _rms_norm(c_kv, w["kv_a_layernorm"])
    st["kv_compress"] = {"c_KV": c_kv, "k_rope": k_rope}
    qh = q.view(nb, T, m.H, m.qk).transpose(1, 2)  # [nb, H, T, d_n+d_r]
    q_nope, q_rope = qh.split([m.nope, m.rope], dim=-1)  # [nb, H, T, d_n], [nb, H, T, d_r]
    k_rope = k_rope.view(nb, S, 1, m.rope).transpose(1, 2)  # [nb, 1, S, d_r], shared by all heads
    st["heads"] = {"q_nope": q_nope, "q_rope": q_rope}
    if cfg.positions == "rope":
        q_pos, k_pos = query_key_positions(T, S, cfg.mask_spec.offset(T, S))
        q_rope, k_rope = apply_rope(q_rope, q_pos), apply_rope(k_rope, k_pos)
        st["rope"] = {"q_rope": q_rope, "k_rope": k_rope}
    return q_nope, q_rope, c_kv, k_rope


def mla_forward(cfg: MHAConfig, x: torch.Tensor, x_kv: torch.Tensor, w: dict[str, torch.Tensor],
                visible: torch.Tensor | None = None, absorbed: bool = False) -> Stages:
    """Every stage's tensors for X [nb, T, D] and X_kv [nb, S, D]; ``visible`` bool [T, S].

    The output is ``result["output"]["Y"]`` [nb, T, D], the same in both forms up to rounding.
    """
    m = mla_dims(cfg)
    st: Stages = {"input": {"X": x} if x_kv is x else {"X": x, "X_kv": x_kv}}
    q_nope, q_rope, c_kv, k_rope = _project(cfg, m, x, x_kv, w, st)
    scale = 1.0 / math.sqrt(m.qk)  # the naive form's scale, kept by the absorbed one
    if absorbed:
        _absorbed_attention(m, w, q_nope, q_rope, c_kv, k_rope, scale, visible, st)
    else:
        _naive_attention(m, w, q_nope, q_rope, c_kv, k_rope, scale, visible, st)
    order = ABSORBED_STAGE_IDS if absorbed else NAIVE_STAGE_IDS
    return {sid: st[sid] for sid in order if sid in st}  # the plan's order


def _naive_attention(m: MLADims, w, q_nope, q_rope, c_kv, k_rope, scale, visible, st: Stages) -> None:
    nb, S = q_nope.shape[0], c_kv.shape[1]
    kv = F.linear(c_kv, w["kv_b_proj"])  # [nb, S, H·(d_n+d_v)]
    st["kv_expand"] = {"KV": kv}
    kvh = kv.view(nb, S, m.H, m.nope + m.v).transpose(1, 2)  # [nb, H, S, d_n+d_v]
    k_nope, v = kvh.split([m.nope, m.v], dim=-1)  # [nb, H, S, d_n], [nb, H, S, d_v]
    st["heads"].update({"K_nope": k_nope, "V": v})
    q = torch.cat([q_nope, q_rope], dim=-1)  # [nb, H, T, d_n+d_r]
    k = torch.cat([k_nope, k_rope.expand(nb, m.H, S, m.rope)], dim=-1)  # [nb, H, S, d_n+d_r]
    scores, weights, ctx = attend(q, k, v, scale, visible)  # ctx [nb, H, T, d_v]
    st["scores"] = {"Q": q, "K": k, "scores": scores}
    st["softmax"] = {"weights": weights}
    st["weighted_sum"] = {"context": ctx}
    _merge_output(ctx, w["o_proj"], w.get("o_proj.bias"), st)


def absorbed_output_weight(m: MLADims, w: dict[str, torch.Tensor]) -> torch.Tensor:
    """W_OUV [D, H·r_kv]: each head's W_UV folded into its slice of W_O, once."""
    w_uv = w["kv_b_proj"].view(m.H, m.nope + m.v, m.kv_lora_rank)[:, m.nope:]  # [H, d_v, r_kv]
    w_o = w["o_proj"].view(m.D, m.H, m.v)  # [D, H, d_v]
    return torch.einsum("dhv,hvr->dhr", w_o, w_uv).reshape(m.D, m.H * m.kv_lora_rank)  # [D, H·r_kv]


def _absorbed_attention(m: MLADims, w, q_nope, q_rope, c_kv, k_rope, scale, visible, st: Stages) -> None:
    w_uk = w["kv_b_proj"].view(m.H, m.nope + m.v, m.kv_lora_rank)[:, : m.nope]  # [H, d_n, r_kv]
    q_lat = q_nope @ w_uk  # [nb, H, T, r_kv]
    st["absorb_q"] = {"q_lat": q_lat}
    latent = c_kv.unsqueeze(1)  # [nb, 1, S, r_kv]: one "head" read by all
    cache = torch.cat([latent, k_rope], dim=-1)  # [nb, 1, S, r_kv+d_r]: exactly what is cached
    q = torch.cat([q_lat, q_rope], dim=-1)  # [nb, H, T, r_kv+d_r]
    scores, weights, ctx_lat = attend(q, cache, latent, scale, visible)  # ctx_lat [nb, H, T, r_kv]
    st["scores"] = {"scores": scores}
    st["softmax"] = {"weights": weights}
    st["weighted_sum"] = {"context": ctx_lat}
    _merge_output(ctx_lat, absorbed_output_weight(m, w), w.get("o_proj.bias"), st)


def _merge_output(ctx: torch.Tensor, w_o: torch.Tensor, b_o: torch.Tensor | None, st: Stages) -> None:
    nb, H, T, width = ctx.shape
    back = ctx.transpose(1, 2)  # [nb, T, H, width], not contiguous
    merged = back.contiguous().view(nb, T, H * width)  # [nb, T, H·width]
    st["merge"] = {"context": back, "merged": merged}
    st["output"] = {"Y": F.linear(merged, w_o, b_o)}  # [nb, T, D]
