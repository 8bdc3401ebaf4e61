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
import threading
import zlib
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from mha_explorer.core.errors import check_cancel
from mha_explorer.core.kernels.decoding import (
    DecodeRun,
    LayerTensors,
    StepResult,
    attend_cache,
    kept_after,
    step_rows,
    visible_rows,
)
from mha_explorer.core.kernels.masks import attend
from mha_explorer.core.kernels.positions import apply_rope, query_key_positions
from mha_explorer.core.kernels.steps import LayerJob, LayerResult, add_positions, position_table, upload
from mha_explorer.core.specs.mask_counts import mask_notes
from mha_explorer.core.stages.catalog import StageId
from mha_explorer.core.variants.latent.dims import RMS_EPS, MLADims, mla_dims
from mha_explorer.core.variants.latent.stages import ABSORBED_STAGE_IDS, NAIVE_STAGE_IDS
from mha_explorer.core.variants.positions import position_notes

if TYPE_CHECKING:
    from mha_explorer.core.config.record import MHAConfig

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
        st[StageId.q_project] = {"Q": q}
    else:
        c_q = F.linear(x, w["q_a_proj"], w.get("q_a_proj.bias"))  # [nb, T, r_q]
        c_q = _rms_norm(c_q, w["q_a_layernorm"])
        q = F.linear(c_q, w["q_b_proj"])  # [nb, T, H·(d_n+d_r)]
        st[StageId.q_project] = {"c_Q": c_q, "Q": q}
    kv_a = F.linear(x_kv, w["kv_a_proj_with_mqa"], w.get("kv_a_proj_with_mqa.bias"))  # [nb, S, r_kv+d_r]
    c_kv, k_rope = kv_a.split([m.kv_lora_rank, m.rope], dim=-1)  # [nb, S, r_kv], [nb, S, d_r]
    c_kv = _rms_norm(c_kv, w["kv_a_layernorm"])
    st[StageId.kv_compress] = {"c_KV": c_kv, "k_rope": k_rope}
    qh = q.view(nb, T, m.H, m.qk).transpose(1, 2)  # [nb, H, T, d_n+d_r]
    q_nope, q_rope = qh.split([m.nope, m.rope], dim=-1)  # [nb, H, T, d_n], [nb, H, T, d_r]
    k_rope = k_rope.view(nb, S, 1, m.rope).transpose(1, 2)  # [nb, 1, S, d_r], shared by all heads
    st[StageId.heads] = {"q_nope": q_nope, "q_rope": q_rope}
    if cfg.positions_spec.rotates_qk:
        q_pos, k_pos = query_key_positions(T, S, cfg.mask_spec.offset(T, S))
        base = cfg.positions_spec.rope_base
        q_rope, k_rope = apply_rope(q_rope, q_pos, base), apply_rope(k_rope, k_pos, base)
        st[StageId.rope] = {"q_rope": q_rope, "k_rope": k_rope}
    return q_nope, q_rope, c_kv, k_rope


def mla_forward(cfg: MHAConfig, x: torch.Tensor, x_kv: torch.Tensor, w: dict[str, torch.Tensor],
                visible: torch.Tensor | None = None, absorbed: bool = False) -> Stages:
    """Every stage's tensors for X [nb, T, D] and X_kv [nb, S, D]; ``visible`` bool [T, S].

    The output is ``result["output"]["Y"]`` [nb, T, D], the same in both forms up to rounding.
    """
    m = mla_dims(cfg)
    st: Stages = {StageId.input: {"X": x} if x_kv is x else {"X": x, "X_kv": x_kv}}
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
    st[StageId.kv_expand] = {"KV": kv}
    kvh = kv.view(nb, S, m.H, m.nope + m.v).transpose(1, 2)  # [nb, H, S, d_n+d_v]
    k_nope, v = kvh.split([m.nope, m.v], dim=-1)  # [nb, H, S, d_n], [nb, H, S, d_v]
    st[StageId.heads].update({"K_nope": k_nope, "V": v})
    q = torch.cat([q_nope, q_rope], dim=-1)  # [nb, H, T, d_n+d_r]
    k = torch.cat([k_nope, k_rope.expand(nb, m.H, S, m.rope)], dim=-1)  # [nb, H, S, d_n+d_r]
    scores, weights, ctx = attend(q, k, v, scale, visible)  # ctx [nb, H, T, d_v]
    st[StageId.scores] = {"Q": q, "K": k, "scores": scores}
    st[StageId.softmax] = {"weights": weights}
    st[StageId.weighted_sum] = {"context": ctx}
    _merge_output(ctx, w["o_proj"], w.get("o_proj.bias"), st)


def absorbed_output_weight(m: MLADims, w: dict[str, torch.Tensor]) -> torch.Tensor:
    """W_OUV [D, H·r_kv]: each head's W_UV folded into its slice of W_O, once."""
    w_uv = w["kv_b_proj"].view(m.H, m.nope + m.v, m.kv_lora_rank)[:, m.nope:]  # [H, d_v, r_kv]
    w_o = w["o_proj"].view(m.D, m.H, m.v)  # [D, H, d_v]
    return torch.einsum("dhv,hvr->dhr", w_o, w_uv).reshape(m.D, m.H * m.kv_lora_rank)  # [D, H·r_kv]


def _absorbed_attention(m: MLADims, w, q_nope, q_rope, c_kv, k_rope, scale, visible, st: Stages) -> None:
    w_uk = w["kv_b_proj"].view(m.H, m.nope + m.v, m.kv_lora_rank)[:, : m.nope]  # [H, d_n, r_kv]
    q_lat = q_nope @ w_uk  # [nb, H, T, r_kv]
    st[StageId.absorb_q] = {"q_lat": q_lat}
    latent = c_kv.unsqueeze(1)  # [nb, 1, S, r_kv]: one "head" read by all
    cache = torch.cat([latent, k_rope], dim=-1)  # [nb, 1, S, r_kv+d_r]: exactly what is cached
    q = torch.cat([q_lat, q_rope], dim=-1)  # [nb, H, T, r_kv+d_r]
    scores, weights, ctx_lat = attend(q, cache, latent, scale, visible)  # ctx_lat [nb, H, T, r_kv]
    st[StageId.scores] = {StageId.scores: scores}
    st[StageId.softmax] = {"weights": weights}
    st[StageId.weighted_sum] = {"context": ctx_lat}
    _merge_output(ctx_lat, absorbed_output_weight(m, w), w.get("o_proj.bias"), st)


def _merge_output(ctx: torch.Tensor, w_o: torch.Tensor, b_o: torch.Tensor | None, st: Stages) -> None:
    nb, H, T, width = ctx.shape
    back = ctx.transpose(1, 2)  # [nb, T, H, width], not contiguous
    merged = back.contiguous().view(nb, T, H * width)  # [nb, T, H·width]
    st[StageId.merge] = {"context": back, "merged": merged}
    st[StageId.output] = {"Y": F.linear(merged, w_o, b_o)}  # [nb, T, D]


class MLAWeightCache:
    """The last latent-attention weights made, reused while only B, T, S or the view change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple | None = None
        self._weights: dict[str, torch.Tensor] | None = None

    def get(self, cfg, device: str, dtype: torch.dtype) -> dict[str, torch.Tensor]:
        key = (cfg.seed, mla_dims(cfg), cfg.bias, str(dtype), device)
        with self._lock:
            if key != self._key:
                self._key, self._weights = None, None  # free the old set first
                self._weights = {n: t.to(device, dtype) for n, t in make_mla_weights(cfg).items()}
                self._key = key
            return self._weights


MLA_WEIGHT_CACHE = MLAWeightCache()


def run_layer(job: LayerJob) -> LayerResult:
    """The whole batch at once (the family runs whole; the memory guard estimated it), naive
    form, every stage of every batch element kept (job.copies) in the plan's stage ids."""
    cfg, work = job.cfg, job.work
    work.check()
    w = MLA_WEIGHT_CACHE.get(cfg, job.device, job.dtype)
    x_in, xkv_in = job.source.inputs(cfg, range(cfg.batch), job.device, job.dtype)  # [B, T, D], [B, S, D]
    job.clock.tick(StageId.input)
    x = add_positions(x_in, cfg)
    xkv = add_positions(xkv_in, cfg, seed_salt=1) if cfg.is_cross else x
    visible = cfg.mask_spec.visible(0, cfg.T, cfg.T, cfg.S)  # [T, S] numpy, or None
    blind = np.zeros(cfg.T, dtype=bool) if visible is None else ~visible.any(axis=1)
    work.check()
    with torch.no_grad():
        mask = None if visible is None else upload(visible, job.device)
        stages = mla_forward(cfg, x, xkv, w, mask, absorbed=False)
        if blind.any():  # softmax of nothing: the weights are 0, as in the other families
            stages[StageId.softmax]["weights"].masked_fill_(upload(blind[:, None], job.device), 0.0)
        y = stages[StageId.output]["Y"]  # [B, T, D]
        norms = torch.linalg.vector_norm(y.float().reshape(cfg.batch, -1), dim=1)  # [B]
    job.clock.tick(StageId.output)  # one step: the forward pass is not split by stage here
    keep = job.copies.keep
    stored = {sid: {name: keep(t) for name, t in tensors.items()} for sid, tensors in stages.items()}
    stored[StageId.input] = {"X": keep(x_in)} | ({"X_kv": keep(xkv_in)} if cfg.is_cross else {})
    if cfg.positions_spec.added_to_input and not cfg.weights_spec.trained:
        stored[StageId.positions] = {"PE": keep(position_table(x_in, x)), "X": keep(x)}
    work.advance(work.total)
    notes = (*mask_notes(cfg), *position_notes(cfg),
             "latent attention, naive form (as trained); the absorbed form is in the plan")
    return LayerResult(stored, w, blind, norms, notes)


# Decoding, tiles and the full pass they are checked against --------------------------------


def layer_tensors(cfg, source) -> LayerTensors:
    """The family's own seeded weights and the source's input X [B, T, D] (and X_kv)."""
    x, xkv = source.inputs(cfg, range(cfg.batch), "cpu", torch.float32)  # [B, T, D], [B, S, D]
    return LayerTensors(make_mla_weights(cfg), x, xkv)


def _naive(cfg, tensors: LayerTensors) -> Stages:
    x = add_positions(tensors.x, cfg)
    xkv = add_positions(tensors.x_kv, cfg, seed_salt=1) if cfg.is_cross else x
    visible = cfg.mask_spec.visible(0, cfg.T, cfg.T, cfg.S)
    mask = None if visible is None else torch.from_numpy(visible)
    with torch.no_grad():
        return mla_forward(cfg, x, xkv, tensors.weights, mask)


def attention_inputs(cfg, tensors: LayerTensors):
    """The naive form's per-head Q, K [B, H, T|S, d_n+d_r] and V [B, H, S, d_v], as the
    scores read them."""
    st = _naive(cfg, tensors)
    return st[StageId.scores]["Q"], st[StageId.scores]["K"], st[StageId.heads]["V"]


def full_pass(cfg, tensors: LayerTensors) -> np.ndarray:
    """The engine's pass (naive form) over the whole sequence: Y [B, T, D]."""
    return _naive(cfg, tensors)[StageId.output]["Y"].numpy()


def _new_tokens(cfg, m: MLADims, w: dict[str, torch.Tensor], x: torch.Tensor, p0: int):
    """The new tokens x [B, n, D] at positions p0.. : the query's two parts
    [B, H, n, d_n], [B, H, n, d_r] and their cache rows [B, n, r_kv + d_r]."""
    B, n = x.shape[0], x.shape[1]
    if m.q_lora_rank is None:
        q = F.linear(x, w["q_proj"])  # [B, n, H·(d_n+d_r)]
    else:
        c_q = F.linear(x, w["q_a_proj"], w.get("q_a_proj.bias"))  # [B, n, r_q]
        c_q = F.rms_norm(c_q, (m.q_lora_rank,), w["q_a_layernorm"], RMS_EPS)
        q = F.linear(c_q, w["q_b_proj"])  # [B, n, H·(d_n+d_r)]
    kv_a = F.linear(x, w["kv_a_proj_with_mqa"], w.get("kv_a_proj_with_mqa.bias"))  # [B, n, r_kv+d_r]
    c_kv, k_rope = kv_a.split([m.kv_lora_rank, m.rope], dim=-1)  # [B, n, r_kv], [B, n, d_r]
    c_kv = F.rms_norm(c_kv, (m.kv_lora_rank,), w["kv_a_layernorm"], RMS_EPS)
    qh = q.view(B, n, m.H, m.qk).transpose(1, 2)  # [B, H, n, d_n+d_r]
    q_nope, q_rope = qh.split([m.nope, m.rope], dim=-1)  # [B, H, n, d_n], [B, H, n, d_r]
    if cfg.positions_spec.rotates_qk:  # each token turned once, by its place in the whole sequence
        pos, base = torch.arange(p0, p0 + n), cfg.positions_spec.rope_base
        q_rope = apply_rope(q_rope, pos, base)
        k_rope = apply_rope(k_rope.unsqueeze(1), pos, base).squeeze(1)  # [B, n, d_r]
    return q_nope, q_rope, torch.cat([c_kv, k_rope], dim=-1)  # [B, n, r_kv+d_r]


def decode(full, prompt: int, steps: int, show: int, tensors: LayerTensors, cancel=None,
           progress=None) -> DecodeRun:
    """The latent cache [B, kept, r_kv + d_r] and the absorbed form: each head's q_nope·W_UK
    scores against the cached latents, W_UV folded into W_O."""
    m = mla_dims(full)
    w = tensors.weights
    x = add_positions(tensors.x, full)  # [B, L, D]
    spec, length = full.mask_spec, full.T
    B, r = full.batch, m.kv_lora_rank
    scale = 1.0 / math.sqrt(m.qk)  # the naive form's scale, kept by the absorbed one
    w_uk = w["kv_b_proj"].view(m.H, m.nope + m.v, r)[:, : m.nope]  # [H, d_n, r_kv]
    w_ouv = absorbed_output_weight(m, w)  # [D, H·r_kv]
    cache = torch.empty(B, 0, m.cached_width)  # [B, kept, r_kv+d_r]
    cached = np.zeros(0, dtype=np.int64)  # the position of each cached token
    results = []
    with torch.no_grad():
        for t in range(steps + 1):
            check_cancel(cancel)  # one step is one token (the prompt pass: at most 512)
            if progress is not None:
                progress(t / (steps + 1))
            p0, p1 = step_rows(t, prompt)
            q_nope, q_rope, rows = _new_tokens(full, m, w, x[:, p0:p1], p0)
            cache = torch.cat([cache, rows], dim=1)  # [B, kept + n, r_kv+d_r]
            cached = np.concatenate([cached, np.arange(p0, p1)])
            q = torch.cat([q_nope @ w_uk, q_rope], dim=-1)  # [B, H, n, r_kv+d_r]
            visible = visible_rows(spec, p0, p1, length, cached)  # [n, keys]
            shared = cache.unsqueeze(1)  # [B, 1, keys, r_kv+d_r]: one cache read by every head
            # the latent part of the cache is the value: ctx [B, H, n, r_kv]
            scores, weights, ctx = attend_cache(q, shared, shared[..., :r], visible, scale)
            merged = ctx.transpose(1, 2).reshape(B, p1 - p0, m.H * r)  # [B, n, H·r_kv]
            y = F.linear(merged, w_ouv, w.get("o_proj.bias"))  # [B, n, D]
            keep = kept_after(spec, p1, cached)  # a sliding window forgets what no later row sees
            scored = tuple(int(p) for p in cached)
            cache, cached = cache[:, keep], cached[keep]  # [B, kept, r_kv+d_r]
            results.append(StepResult(
                t, (p0, p1), tuple(int(p) for p in cached), y.numpy().copy(),
                scores[show].numpy().copy(), weights[show].numpy().copy(), scored))
    latent, k_rope = cache[show].split([r, m.rope], dim=-1)  # [kept, r_kv], [kept, d_r]
    return DecodeRun(full, prompt, tuple(results), latent[None].numpy().copy(), k_rope[None].numpy().copy())
