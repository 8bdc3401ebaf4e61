"""A short PyTorch implementation of a grouped-family layer (MHA, GQA, MQA), written for one config.

The stage view shows this text beside the diagram and highlights the lines of the current
stage. The shape comments carry the config's real sizes and the code keeps only the lines the
config needs (no repeat for MHA, no mask when not causal). The text is only *about* torch.
"""

from __future__ import annotations

from mha_explorer.core.stages.catalog import StageId
from mha_explorer.core.variants.code_lines import (
    Lines,
    blind_rows_possible,
    mask_lines,
    needs_general_mask,
    positions_lines,
    rope_lines,
    shape_comment,
    shape_text,
    signature_extras,
)
from mha_explorer.core.variants.family import CodeListing
from mha_explorer.core.variants.grouped.shapes import grouped_stages


def grouped_listing(cfg) -> CodeListing:
    """The PyTorch source of ``attention(...)`` for a grouped-family config."""
    out = _build(cfg)
    return CodeListing("\n".join(out.lines) + "\n", dict(out.ranges))


def _build(cfg) -> Lines:
    plan_stages = grouped_stages(cfg)
    shared_kv = cfg.Hkv != cfg.H
    kv_heads = "Hkv" if shared_kv else "H"
    out = Lines()
    t = {s.id: s for s in plan_stages}

    out.add("import math", indent=0)
    out.add(indent=0)
    out.add("import torch", indent=0)
    out.add("import torch.nn.functional as F", indent=0)
    out.add(indent=0)
    out.add(indent=0)
    heads_args = f"n_heads={cfg.H}" + (f", n_kv_heads={cfg.Hkv}" if shared_kv else "")
    if cfg.head_dim is not None:
        heads_args += f", d_k={cfg.d_k}"
    norms = "norm, q_norm, k_norm, " if cfg.norms else "norm, " if cfg.normed_input else ""
    out.add("def attention(x, x_kv, W_Q, b_Q, W_K, b_K, W_V, b_V, W_O, b_O,", indent=0)
    out.add(f"              {norms}{signature_extras(cfg)}{heads_args}):", indent=0)
    out.add(f'"""{cfg.variant}. Weights as in nn.Linear (out × in); biases may be None."""')

    _head_stages(out, cfg, t, shared_kv, kv_heads)
    _attention_stages(out, cfg, t, shared_kv)
    _merge_stages(out, t, cfg)
    return out


def _head_stages(out: Lines, cfg, t: dict, shared_kv: bool, kv_heads: str) -> None:
    """Input, projections, view and transpose: the tensors each head will read."""
    out.begin(StageId.input)
    out.add(comment="B sequences of T tokens, D numbers each")
    out.add("B, T, D = x.shape", shape_comment(t[StageId.input].tensor("X")))
    out.add("S = x_kv.shape[1]", f"S = {cfg.S} keys and values")
    out.add("H, Hkv = n_heads, n_kv_heads" if shared_kv else "H = n_heads",
            f"{cfg.H} query heads, {cfg.Hkv} kv head{'s' if cfg.Hkv > 1 else ''}"
            if shared_kv else f"{cfg.H} heads")
    if cfg.head_dim is None:
        out.add("d_k = D // H", f"d_k = {cfg.d_k}")
    else:
        out.add(comment=f"heads of their own width: H·d_k = {cfg.q_dim}, not D = {cfg.d_model}")
    out.end()
    out.add()
    if StageId.positions in t:
        positions_lines(out, cfg, t[StageId.positions])
    if StageId.norm in t:
        out.begin(StageId.norm)
        out.add(comment="RMSNorm: every token to the same size, then a learned scale")
        eps = f"{cfg.norm_eps:.0e}".replace("e-0", "e-")  # 1e-6, as people write it
        out.add("def rms(t, w):", f"over the last axis; eps {eps}")
        out.add(f"return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + {eps}) * w", indent=2)
        out.add("x = rms(x, norm)", shape_comment(t[StageId.norm].tensor("X")))
        out.add("x_kv = rms(x_kv, norm)" if cfg.is_cross else "x_kv = x")
        out.end()
        out.add()

    out.begin(StageId.project)
    out.add(comment="project every token to a query, a key and a value")
    proj = t[StageId.project]
    out.add("q = F.linear(x, W_Q, b_Q)", shape_comment(proj.tensor("Q")))
    out.add("k = F.linear(x_kv, W_K, b_K)", shape_comment(proj.tensor("K")))
    out.add("v = F.linear(x_kv, W_V, b_V)", shape_comment(proj.tensor("V")))
    out.end()
    out.add()

    out.begin(StageId.view)
    out.add(comment="split the last axis into heads: a view, no data moves")
    view = t[StageId.view]
    out.add("q = q.view(B, T, H, d_k)", shape_comment(view.tensor("Q")))
    out.add(f"k = k.view(B, S, {kv_heads}, d_k)", shape_comment(view.tensor("K"), shared_kv))
    out.add(f"v = v.view(B, S, {kv_heads}, d_k)", shape_comment(view.tensor("V"), shared_kv))
    out.end()
    out.add()

    out.begin(StageId.transpose)
    out.add(comment="heads to axis 1: only the strides change")
    tr = t[StageId.transpose]
    out.add("q = q.transpose(1, 2)", shape_comment(tr.tensor("Q")))
    out.add("k = k.transpose(1, 2)", shape_comment(tr.tensor("K"), shared_kv))
    out.add("v = v.transpose(1, 2)", shape_comment(tr.tensor("V"), shared_kv))
    out.end()
    out.add()
    if StageId.qk_norm in t:
        out.begin(StageId.qk_norm)
        out.add(comment="each head's q and k to the same size before the dot product")
        out.add("q = rms(q, q_norm)", shape_comment(t[StageId.qk_norm].tensor("Q")))
        out.add("k = rms(k, k_norm)", shape_comment(t[StageId.qk_norm].tensor("K"), shared_kv))
        out.end()
        out.add()
    if StageId.rope in t:
        rope_lines(out, cfg)



def _attention_stages(out: Lines, cfg, t: dict, shared_kv: bool) -> None:
    """Scores (with the mask), softmax and the weighted sum."""
    repeated = f"{shape_text((cfg.batch, cfg.H, cfg.S, cfg.d_k))}  B, H, S, d_k"
    out.begin(StageId.scores)
    out.add(comment="every query against every key, scaled by 1/√d_k")
    if shared_kv:
        out.add("k = k.repeat_interleave(H // Hkv, dim=1)",
                f"{repeated}; head i reads kv head i // {cfg.group_size}")
    out.add("att = q @ k.transpose(-2, -1) / math.sqrt(d_k)",
            shape_comment(t[StageId.scores].tensor("scores")))
    if needs_general_mask(cfg):
        mask_lines(out, cfg)
    elif cfg.causal:
        if cfg.causal_alignment == "bottom-right":
            tril, seen = "tril(S - T)", "bottom-right: query i sees keys 0..i+S-T"
        else:
            tril, seen = "tril()", "top-left (as is_causal): query i sees keys 0..i"
        out.add(f"seen = torch.ones(T, S, device=x.device).{tril}.bool()", seen)
        out.add('att = att.masked_fill(~seen, float("-inf"))')
    out.end()
    out.add()

    out.begin(StageId.softmax)
    out.add(comment="each row becomes weights over the keys that sum to 1")
    out.add("att = att.softmax(dim=-1)", shape_comment(t[StageId.softmax].tensor("weights")))
    if blind_rows_possible(cfg):
        out.add("att = att.nan_to_num(0.0)", "rows that see no key: 0, not NaN")
    out.end()
    out.add()

    out.begin(StageId.weighted_sum)
    out.add(comment="average the values, weighted by each row")
    if shared_kv:
        out.add("v = v.repeat_interleave(H // Hkv, dim=1)", repeated)
    out.add("y = att @ v", shape_comment(t[StageId.weighted_sum].tensor("context")))
    out.end()
    out.add()



def _merge_stages(out: Lines, t: dict, cfg) -> None:
    """Heads side by side again, then W_O."""
    merge = t[StageId.merge]
    out.begin(StageId.merge)
    out.add(comment="heads side by side again: .contiguous() is the first copy"
            if merge.tensor("merged").allocates
            else "heads side by side again (already contiguous here: no copy)")
    out.add("y = y.transpose(1, 2).contiguous()", shape_comment(merge.tensor("context")))
    out.add("y = y.view(B, T, D)" if cfg.head_dim is None else "y = y.view(B, T, H * d_k)",
            shape_comment(merge.tensor("merged")))
    out.end()
    out.add()

    out.begin(StageId.output)
    out.add(comment="mix the heads with W_O")
    out.add("return F.linear(y, W_O, b_O)", shape_comment(t[StageId.output].tensor("Y")))
    out.end()
