"""A short PyTorch implementation of the whole layer, written for one config.

The stage view shows this text beside the diagram and highlights the lines of
the current stage, so the text is generated here, next to the plan it follows:
the shape comments carry the config's real sizes and the code keeps only the
lines the config needs (no repeat for MHA, no mask when not causal). No torch
and no Qt are imported; the text is only *about* torch.
"""

from __future__ import annotations

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.text.code_lines import (
    blind_rows_possible,
    mask_lines,
    needs_general_mask,
    positions_lines,
    rope_lines,
    signature_extras,
)

COMMENT_COLUMN = 34  # shape comments line up here unless the statement is longer
INDENT = "    "


def _shape(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _shape_comment(spec, shared_kv: bool = True) -> str:
    """'[2, 8, 8, 64]  B, H, T, d_k' from a plan TensorSpec.

    Without shared key/value heads the code has no Hkv, so the comment says H.
    """
    dims = spec.dims if shared_kv else tuple("H" if d == "Hkv" else d for d in spec.dims)
    return f"{_shape(spec.shape)}  {', '.join(dims)}"


class _Lines:
    """Collects code lines and remembers which stage each run of lines belongs to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ranges: dict[str, tuple[int, int]] = {}
        self._stage: str | None = None
        self._first = 0

    def add(self, code: str = "", comment: str = "", indent: int = 1) -> None:
        text = INDENT * indent + code if code else ""
        if comment and code and len(text) >= COMMENT_COLUMN - 1:
            # a long statement keeps its comment on the line above, so lines stay short
            self.lines.append(INDENT * indent + "# " + comment)
            comment = ""
        if comment:
            text = (text.ljust(COMMENT_COLUMN - 1) + " " if code else INDENT * indent) + "# " + comment
        self.lines.append(text.rstrip())

    def begin(self, stage: str) -> None:
        self._stage, self._first = stage, len(self.lines) + 1

    def end(self) -> None:
        self.ranges[self._stage] = (self._first, len(self.lines))
        self._stage = None


def _build(cfg: MHAConfig) -> _Lines:
    if cfg.mla:
        from mha_explorer.core.variants.latent.code import build_mla  # it imports this module's kin

        out = _Lines()
        build_mla(cfg, out)
        return out
    plan = build_plan(cfg)
    shared_kv = cfg.Hkv != cfg.H
    kv_heads = "Hkv" if shared_kv else "H"
    out = _Lines()
    t = {sid: plan.stage(sid) for sid in plan.stage_ids}

    out.add("import math", indent=0)
    out.add(indent=0)
    out.add("import torch", indent=0)
    out.add("import torch.nn.functional as F", indent=0)
    out.add(indent=0)
    out.add(indent=0)
    heads_args = f"n_heads={cfg.H}" + (f", n_kv_heads={cfg.Hkv}" if shared_kv else "")
    out.add("def attention(x, x_kv, W_Q, b_Q, W_K, b_K, W_V, b_V, W_O, b_O,", indent=0)
    out.add(f"              {signature_extras(cfg)}{heads_args}):", indent=0)
    out.add(f'"""{cfg.variant}. Weights as in nn.Linear (out × in); biases may be None."""')

    _head_stages(out, cfg, t, shared_kv, kv_heads)
    _attention_stages(out, cfg, t, shared_kv)
    _merge_stages(out, t)
    return out


def _head_stages(out: _Lines, cfg: MHAConfig, t: dict, shared_kv: bool, kv_heads: str) -> None:
    """Input, projections, view and transpose: the tensors each head will read."""
    out.begin("input")
    out.add(comment="B sequences of T tokens, D numbers each")
    out.add("B, T, D = x.shape", _shape_comment(t["input"].tensor("X")))
    out.add("S = x_kv.shape[1]", f"S = {cfg.S} keys and values")
    out.add("H, Hkv = n_heads, n_kv_heads" if shared_kv else "H = n_heads",
            f"{cfg.H} query heads, {cfg.Hkv} kv head{'s' if cfg.Hkv > 1 else ''}"
            if shared_kv else f"{cfg.H} heads")
    out.add("d_k = D // H", f"d_k = {cfg.d_k}")
    out.end()
    out.add()
    if "positions" in t:
        positions_lines(out, cfg, t["positions"])

    out.begin("project")
    out.add(comment="project every token to a query, a key and a value")
    proj = t["project"]
    out.add("q = F.linear(x, W_Q, b_Q)", _shape_comment(proj.tensor("Q")))
    out.add("k = F.linear(x_kv, W_K, b_K)", _shape_comment(proj.tensor("K")))
    out.add("v = F.linear(x_kv, W_V, b_V)", _shape_comment(proj.tensor("V")))
    out.end()
    out.add()

    out.begin("view")
    out.add(comment="split the last axis into heads: a view, no data moves")
    view = t["view"]
    out.add("q = q.view(B, T, H, d_k)", _shape_comment(view.tensor("Q")))
    out.add(f"k = k.view(B, S, {kv_heads}, d_k)", _shape_comment(view.tensor("K"), shared_kv))
    out.add(f"v = v.view(B, S, {kv_heads}, d_k)", _shape_comment(view.tensor("V"), shared_kv))
    out.end()
    out.add()

    out.begin("transpose")
    out.add(comment="heads to axis 1: only the strides change")
    tr = t["transpose"]
    out.add("q = q.transpose(1, 2)", _shape_comment(tr.tensor("Q")))
    out.add("k = k.transpose(1, 2)", _shape_comment(tr.tensor("K"), shared_kv))
    out.add("v = v.transpose(1, 2)", _shape_comment(tr.tensor("V"), shared_kv))
    out.end()
    out.add()
    if "rope" in t:
        rope_lines(out, cfg)



def _attention_stages(out: _Lines, cfg: MHAConfig, t: dict, shared_kv: bool) -> None:
    """Scores (with the mask), softmax and the weighted sum."""
    repeated = f"{_shape((cfg.batch, cfg.H, cfg.S, cfg.d_k))}  B, H, S, d_k"
    out.begin("scores")
    out.add(comment="every query against every key, scaled by 1/√d_k")
    if shared_kv:
        out.add("k = k.repeat_interleave(H // Hkv, dim=1)",
                f"{repeated}; head i reads kv head i // {cfg.group_size}")
    out.add("att = q @ k.transpose(-2, -1) / math.sqrt(d_k)",
            _shape_comment(t["scores"].tensor("scores")))
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

    out.begin("softmax")
    out.add(comment="each row becomes weights over the keys that sum to 1")
    out.add("att = att.softmax(dim=-1)", _shape_comment(t["softmax"].tensor("weights")))
    if blind_rows_possible(cfg):
        out.add("att = att.nan_to_num(0.0)", "rows that see no key: 0, not NaN")
    out.end()
    out.add()

    out.begin("weighted_sum")
    out.add(comment="average the values, weighted by each row")
    if shared_kv:
        out.add("v = v.repeat_interleave(H // Hkv, dim=1)", repeated)
    out.add("y = att @ v", _shape_comment(t["weighted_sum"].tensor("context")))
    out.end()
    out.add()



def _merge_stages(out: _Lines, t: dict) -> None:
    """Heads side by side again, then W_O."""
    merge = t["merge"]
    out.begin("merge")
    out.add(comment="heads side by side again: .contiguous() is the first copy"
            if merge.tensor("merged").allocates
            else "heads side by side again (already contiguous here: no copy)")
    out.add("y = y.transpose(1, 2).contiguous()", _shape_comment(merge.tensor("context")))
    out.add("y = y.view(B, T, D)", _shape_comment(merge.tensor("merged")))
    out.end()
    out.add()

    out.begin("output")
    out.add(comment="mix the heads with W_O")
    out.add("return F.linear(y, W_O, b_O)", _shape_comment(t["output"].tensor("Y")))
    out.end()


def reference_code(cfg: MHAConfig) -> str:
    """The PyTorch source of ``attention(...)`` for this config, shape comments included."""
    return "\n".join(_build(cfg).lines) + "\n"


def stage_lines(cfg: MHAConfig) -> dict[str, tuple[int, int]]:
    """Stage id -> (first, last) line of ``reference_code(cfg)``, 1-based and inclusive."""
    return dict(_build(cfg).ranges)
