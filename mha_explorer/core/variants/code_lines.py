"""Writing reference code: the line collector every family's listing uses, and the lines for
positions, RoPE and masks beyond plain causal that more than one family writes.

Each function adds one stage's lines to the same ``Lines`` collector, with the config's real
sizes in the shape comments. No torch and no Qt: the text is only about torch.
"""

from __future__ import annotations

from mha_explorer.core.stages.catalog import StageId

COMMENT_COLUMN = 34  # shape comments line up here unless the statement is longer
INDENT = "    "


def shape_text(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def shape_comment(spec, shared_kv: bool = True) -> str:
    """'[2, 8, 8, 64]  B, H, T, d_k' from a plan TensorSpec.

    Without shared key/value heads the code has no Hkv, so the comment says H.
    """
    dims = spec.dims if shared_kv else tuple("H" if d == "Hkv" else d for d in spec.dims)
    return f"{shape_text(spec.shape)}  {', '.join(dims)}"


class Lines:
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


def signature_extras(cfg) -> str:
    """Learned position tables are the model's own numbers, so the code takes them."""
    if cfg.positions != "learned" or cfg.weights_spec.trained:
        return ""
    return "P, P_kv, " if cfg.is_cross else "P, "


def positions_lines(out, cfg, stage) -> None:
    """Stage "positions": a table of position vectors added to the tokens."""
    out.begin(StageId.positions)
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


def rope_helpers(out, width: str, base: float = 10_000) -> None:
    """rotate_half and the angles, written once before the rope stage uses them."""
    b = f"{base:g}" if base < 1e5 else f"{base:.0e}".replace("e+0", "e").replace("e+", "e")
    out.add("def rot(t):", "[a, b] -> [-b, a]: pairs turned 90°")
    out.add("a, b = t.chunk(2, dim=-1)", indent=2)
    out.add("return torch.cat([-b, a], dim=-1)", indent=2)
    out.add("def turn(t, pos):", f"by pos·θ_i, θ_i = {b}^(-2i/{width})")
    out.add(f"i = torch.arange(0, {width}, 2) / {width}", indent=2)
    out.add(f"a = pos[:, None] / {b} ** i", indent=2)
    out.add("a = torch.cat([a, a], dim=-1).to(t)", indent=2)
    out.add("return t * a.cos() + rot(t) * a.sin()", indent=2)


def rope_lines(out, cfg, q_name: str = "q", k_name: str = "k", width: str = "d_k") -> None:
    """Stage "rope": queries and keys turned by their positions (rotate-half, as LLaMA)."""
    offset = cfg.mask_spec.offset(cfg.T, cfg.S)
    out.begin(StageId.rope)
    out.add(comment="RoPE: turn q and k by position; q·k then sees only distance")
    rope_helpers(out, width, cfg.positions_spec.rope_base)
    start = f"torch.arange(T) + {offset}" if offset else "torch.arange(T)"
    out.add(f"{q_name} = turn({q_name}, {start})", "query i sits at i" + (f" + {offset}" if offset else ""))
    out.add(f"{k_name} = turn({k_name}, torch.arange(S))", "key j sits at j")
    out.end()
    out.add()


def needs_general_mask(cfg) -> bool:
    return cfg.mask_spec.sparse


def mask_lines(out, cfg) -> None:
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


def blind_rows_possible(cfg) -> bool:
    """Whether some query row may see no key (its softmax would be NaN)."""
    m = cfg.mask_spec
    if m.stride is not None and m.stride > 1:
        return True
    return m.causal and m.alignment == "bottom-right" and cfg.T > cfg.S
