"""The reference code of multi-head latent attention (MLA), naive form, for one config.

Written like reference_code.py (same line collector, the config's real sizes in
the shape comments, each stage's lines remembered for the highlight) and run by
the tests against the engine. The weights come as one dict keyed by the
checkpoint's module names, as core/mla_engine.py uses them.
"""

from __future__ import annotations

from mha_explorer.core.stages.catalog import StageId
from mha_explorer.core.variants.code_lines import Lines, blind_rows_possible, mask_lines, rope_lines
from mha_explorer.core.variants.family import CodeListing
from mha_explorer.core.variants.latent.dims import RMS_EPS, mla_dims


def _dims(shape, names: str) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]  " + names


def latent_listing(cfg) -> CodeListing:
    """The naive-form listing of a latent-attention config."""
    out = Lines()
    _build(cfg, out)
    return CodeListing("\n".join(out.lines) + "\n", dict(out.ranges))


def _build(cfg, out: Lines) -> None:
    m = mla_dims(cfg)
    B, T, S, H = cfg.batch, cfg.T, cfg.S, cfg.H
    for line in ("import math", "", "import torch", "import torch.nn.functional as F", "", ""):
        out.add(line, indent=0)
    out.add(f"def attention(x, x_kv, w, n_heads={H}, d_nope={m.nope}, d_rope={m.rope}, d_v={m.v},",
            indent=0)
    out.add(f"              r_kv={m.kv_lora_rank}):", indent=0)
    out.add('"""MLA, naive form. w: the checkpoint\'s tensors by module name."""')
    out.begin(StageId.input)
    out.add("B, T, D = x.shape", _dims((B, T, cfg.d_model), "B, T, D"))
    out.add("S, H = x_kv.shape[1], n_heads", f"S = {S}, H = {H}")
    out.add("def norm(t, name):", "RMSNorm with its learned scale")
    out.add(f'return F.rms_norm(t, (t.shape[-1],), w[name], {RMS_EPS})', indent=2)
    out.end()
    out.add()
    _projections(out, cfg, m)
    _heads(out, cfg, m)
    _attention(out, cfg, m)


def _projections(out, cfg, m) -> None:
    B, T, S, H = cfg.batch, cfg.T, cfg.S, cfg.H
    out.begin(StageId.q_project)
    if m.q_lora_rank is None:
        out.add(comment="queries: one projection")
        out.add('q = F.linear(x, w["q_proj"])', _dims((B, T, H * m.qk), "B, T, H·(d_n+d_r)"))
    else:
        out.add(comment="queries through a low-rank latent c_Q")
        out.add('c_q = F.linear(x, w["q_a_proj"], w.get("q_a_proj.bias"))',
                _dims((B, T, m.q_lora_rank), "B, T, r_q"))
        out.add('q = F.linear(norm(c_q, "q_a_layernorm"), w["q_b_proj"])',
                _dims((B, T, H * m.qk), "B, T, H·(d_n+d_r)"))
    out.end()
    out.add()
    out.begin(StageId.kv_compress)
    out.add(comment="keys and values squeezed into c_KV; k_rope shared: both cached")
    out.add('kv = F.linear(x_kv, w["kv_a_proj_with_mqa"],', _dims((B, S, m.cached_width), "B, S, r_kv+d_r"))
    out.add('             w.get("kv_a_proj_with_mqa.bias"))')
    out.add("c_kv, k_rope = kv.split([r_kv, d_rope], dim=-1)")
    out.add('c_kv = norm(c_kv, "kv_a_layernorm")', _dims((B, S, m.kv_lora_rank), "B, S, r_kv"))
    out.end()
    out.add()
    out.begin(StageId.kv_expand)
    out.add(comment="the latent expanded to every head's K and V")
    out.add('kv = F.linear(c_kv, w["kv_b_proj"])', _dims((B, S, H * (m.nope + m.v)), "B, S, H·(d_n+d_v)"))
    out.end()
    out.add()


def _heads(out, cfg, m) -> None:
    B, T, S, H = cfg.batch, cfg.T, cfg.S, cfg.H
    out.begin(StageId.heads)
    out.add(comment="split heads (view), heads to axis 1 (transpose), then parts")
    out.add("q = q.view(B, T, H, d_nope + d_rope).transpose(1, 2)",
            _dims((B, H, T, m.qk), "B, H, T, d_n+d_r"))
    out.add("q_nope, q_rope = q.split([d_nope, d_rope], dim=-1)")
    out.add("k_rope = k_rope.view(B, S, 1, d_rope).transpose(1, 2)",
            _dims((B, 1, S, m.rope), "B, 1, S, d_r"))
    out.add("kv = kv.view(B, S, H, d_nope + d_v).transpose(1, 2)",
            _dims((B, H, S, m.nope + m.v), "B, H, S, d_n+d_v"))
    out.add("k_nope, v = kv.split([d_nope, d_v], dim=-1)")
    out.end()
    out.add()
    if cfg.positions_spec.rotates_qk:
        rope_lines(out, cfg, "q_rope", "k_rope", "d_rope")


def _attention(out, cfg, m) -> None:
    B, T, S, H = cfg.batch, cfg.T, cfg.S, cfg.H
    out.begin(StageId.scores)
    out.add(comment="scores over the joined [nope | rope] parts")
    out.add("q = torch.cat([q_nope, q_rope], dim=-1)", _dims((B, H, T, m.qk), "B, H, T, d_n+d_r"))
    out.add("k_rope = k_rope.expand(B, H, S, d_rope)", "one rope key read by all heads")
    out.add("k = torch.cat([k_nope, k_rope], dim=-1)", _dims((B, H, S, m.qk), "B, H, S, d_n+d_r"))
    out.add("att = q @ k.transpose(-2, -1)", _dims((B, H, T, S), "B, H, T, S"))
    out.add("att = att / math.sqrt(d_nope + d_rope)")
    if cfg.mask_spec.masks_anything:
        mask_lines(out, cfg)
    out.end()
    out.add()
    out.begin(StageId.softmax)
    out.add("att = att.softmax(dim=-1)", _dims((B, H, T, S), "B, H, T, S"))
    if blind_rows_possible(cfg):
        out.add("att = att.nan_to_num(0.0)", "rows that see no key: 0, not NaN")
    out.end()
    out.add()
    out.begin(StageId.weighted_sum)
    out.add("y = att @ v", _dims((B, H, T, m.v), "B, H, T, d_v"))
    out.end()
    out.add()
    out.begin(StageId.merge)
    out.add("y = y.transpose(1, 2).reshape(B, T, H * d_v)", _dims((B, T, H * m.v), "B, T, H·d_v"))
    out.end()
    out.add()
    out.begin(StageId.output)
    out.add('return F.linear(y, w["o_proj"], w.get("o_proj.bias"))', _dims((B, T, cfg.d_model), "B, T, D"))
    out.end()
