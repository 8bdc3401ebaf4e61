"""The reference code's lines for positions, RoPE and masks beyond plain causal.

Kept beside reference_code.py so the classic listing stays short; each function
adds one stage's lines to the same ``_Lines`` collector, with the config's real
sizes in the shape comments. No torch and no Qt: the text is only about torch.
"""

from __future__ import annotations

from mha_explorer.core.config import MHAConfig

RMS_EPS = "1e-6"  # DeepSeek's rms_norm_eps, as core/mla_engine.py uses


def signature_extras(cfg: MHAConfig) -> str:
    """Learned position tables are the model's own numbers, so the code takes them."""
    if cfg.positions != "learned" or cfg.weights_spec.trained:
        return ""
    return "P, P_kv, " if cfg.is_cross else "P, "


def positions_lines(out, cfg: MHAConfig, stage) -> None:
    """Stage "positions": a table of position vectors added to the tokens."""
    out.begin("positions")
    D, T, S = cfg.d_model, cfg.T, cfg.S
    if cfg.positions == "sinusoidal":
        out.add(comment="same word, another place: add a sin/cos pattern per position")
        out.add("def sinusoid(L):", f"[L, {D}]: sin, cos of p/10000^i")
        out.add("i = torch.arange(0, D, 2) / D", indent=2)
        out.add("a = torch.arange(L)[:, None] / 10000 ** i", indent=2)
        out.add("return torch.stack([a.sin(), a.cos()], -1).flatten(1)[:, :D]", indent=2)
        out.add("x = x + sinusoid(T).to(x)", f"[{cfg.batch}, {T}, {D}]  B, T, D")
        if cfg.is_cross:
            out.add("x_kv = x_kv + sinusoid(S).to(x_kv)", f"[{cfg.batch}, {S}, {D}]  B, S, D")
        else:
            out.add("x_kv = x", "self-attention: keys see it too")
    else:
        out.add(comment="same word, another place: add the learned position vectors")
        out.add("x = x + P", f"P [{T}, {D}]: learned, one per place")
        if cfg.is_cross:
            out.add("x_kv = x_kv + P_kv", f"P_kv [{S}, {D}]")
        else:
            out.add("x_kv = x", "self-attention: keys see it too")
    out.end()
    out.add()


def rope_helpers(out, width: str) -> None:
    """rotate_half and the angles, written once before the rope stage uses them."""
    out.add("def rot(t):", "[a, b] -> [-b, a]: pairs turned 90°")
    out.add("a, b = t.chunk(2, dim=-1)", indent=2)
    out.add("return torch.cat([-b, a], dim=-1)", indent=2)
    out.add("def turn(t, pos):", f"by pos·θ_i, θ_i = 10000^(-2i/{width})")
    out.add(f"i = torch.arange(0, {width}, 2) / {width}", indent=2)
    out.add("a = pos[:, None] / 10000 ** i", indent=2)
    out.add("a = torch.cat([a, a], dim=-1).to(t)", indent=2)
    out.add("return t * a.cos() + rot(t) * a.sin()", indent=2)


def rope_lines(out, cfg: MHAConfig, q_name: str = "q", k_name: str = "k", width: str = "d_k") -> None:
    """Stage "rope": queries and keys turned by their positions (rotate-half, as LLaMA)."""
    offset = cfg.mask_spec.offset(cfg.T, cfg.S)
    out.begin("rope")
    out.add(comment="RoPE: turn q and k by position; q·k then sees only distance")
    rope_helpers(out, width)
    start = f"torch.arange(T) + {offset}" if offset else "torch.arange(T)"
    out.add(f"{q_name} = turn({q_name}, {start})", "query i sits at i" + (f" + {offset}" if offset else ""))
    out.add(f"{k_name} = turn({k_name}, torch.arange(S))", "key j sits at j")
    out.end()
    out.add()


def needs_general_mask(cfg: MHAConfig) -> bool:
    return cfg.mask_spec.sparse


def mask_lines(out, cfg: MHAConfig) -> None:
    """The visible keys of a window / stride / global pattern, by the same rule as the
    engine (core/specs.py MaskSpec.visible): causal is applied last."""
    m = cfg.mask_spec
    offset = m.offset(cfg.T, cfg.S)
    out.add("p = torch.arange(T)[:, None]" + (f" + {offset}" if offset else ""), "query positions [T, 1]")
    out.add("j = torch.arange(S)[None, :]", "key positions [1, S]")
    rules = []
    if m.window is not None:
        rules.append(f"(j > p - {m.window})" + ("" if m.causal else f" & (j < p + {m.window})"))
    if m.stride is not None:
        rules.append(f"((p - j) % {m.stride} == 0)")
    if not rules:  # causal alone
        out.add("seen = j <= p", "causal: never the future")
    else:
        out.add("seen = " + " & ".join(rules), "a band of keys around each query")
        if m.global_tokens:
            g = m.global_tokens
            out.add(f"seen = seen | (j < {g}) | ((p >= 0) & (p < {g}))", f"{g} global tokens")
        if m.causal:
            out.add("seen = seen & (j <= p)", "causal last: never the future")
    out.add('att = att.masked_fill(~seen.to(x.device), float("-inf"))')


def blind_rows_possible(cfg: MHAConfig) -> bool:
    """Whether some query row may see no key (its softmax would be NaN)."""
    m = cfg.mask_spec
    if m.stride is not None and m.stride > 1:
        return True
    return m.causal and m.alignment == "bottom-right" and cfg.T > cfg.S
