"""The colours of the app, one system per quantity, and the one rule for ink on a colour.

- named dims (B, T, S, H, ...): the Okabe–Ito palette, the same in every panel;
- key/value head groups: Paul Tol's "bright" scheme, none of which is a dim colour,
  so a group never reads as a dimension;
- attention weights in [0, 1]: viridis; scores (centred on 0): CET-CBD1. The names
  are pyqtgraph's colour maps, used by the stage diagram and the heads panel alike.

No Qt here: colours are '#RRGGBB' strings, so the CLI and tests can use them too.
"""

from __future__ import annotations

DIM_COLORS: dict[str, str] = {
    "B": "#0072B2",  # blue
    "T": "#D55E00",  # vermillion
    "S": "#E69F00",  # orange: the key axis, a sibling of T
    "H": "#009E73",  # bluish green
    "Hkv": "#56B4E9",  # sky blue: the shared heads
    "d_k": "#CC79A7",  # reddish purple
    "D": "#7F7F7F",  # grey: the model width
    "Hkv·d_k": "#56B4E9",
}
OTHER_DIM = "#7F7F7F"
# latent attention's dims drawn in the colour of their MHA relative: the latents (what is
# cached, like Hkv's keys) in Hkv's, the per-head widths in d_k's, the heads side by side in D's
DIM_RELATIVES: dict[str, str] = {
    "r_kv": "Hkv", "r_q": "Hkv", "d_n": "d_k", "d_r": "d_k", "d_v": "d_k", "d_n+d_r": "d_k",
    "H·(d_n+d_r)": "D", "H·(d_n+d_v)": "D", "H·d_v": "D", "H·r_kv": "D", "(r_kv+d_r)": "Hkv", "1": "Hkv",
}

GROUP_COLORS = ("#4477AA", "#EE6677", "#228833", "#CCBB44", "#AA3377", "#66CCEE", "#BBBBBB")

# viridis: perceptually uniform and colour-blind safe, for weights in [0, 1].
# CET-CBD1: Kovesi's colour-blind-safe diverging map (blue - grey - yellow),
# centred on 0 by symmetric levels.
WEIGHTS_COLORMAP = "viridis"
DIVERGING_COLORMAP = "CET-CBD1"
# what each colour map's ends look like, for words that say what the colours do
COLORMAP_ENDS = {WEIGHTS_COLORMAP: ("dark purple", "yellow"), DIVERGING_COLORMAP: ("blue", "yellow")}


def scale_words(colormap: str, low: float, high: float) -> str:
    """'dark purple 0 → yellow 0.43': which colour stands for which value."""
    dark, bright = COLORMAP_ENDS[colormap]
    return f"{dark} {low:.2g} → {bright} {high:.2g}"


def dim_color(dim: str) -> str:
    return DIM_COLORS.get(dim, OTHER_DIM)


def relative_dim_color(dim: str) -> str:
    """The stage diagram's colour for ``dim``: a variant's own dim in its MHA relative's."""
    return dim_color(DIM_RELATIVES.get(dim, dim))


def group_color(group: int) -> str:
    """The colour of key/value head ``group``: heads that share K and V share it."""
    return GROUP_COLORS[group % len(GROUP_COLORS)]


def _rgb(color: str) -> tuple[int, int, int]:
    text = color.lstrip("#")
    if len(text) != 6:
        raise ValueError(f"not a #RRGGBB colour: {color!r}")
    return int(text[0:2], 16), int(text[2:4], 16), int(text[4:6], 16)


def relative_luminance(color: str) -> float:
    """WCAG 2 relative luminance of an sRGB '#RRGGBB' colour, 0 (black) to 1 (white)."""

    def channel(value: int) -> float:
        v = value / 255
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = _rgb(color)
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast_ratio(fg: str, bg: str) -> float:
    """WCAG 2 contrast ratio, from 1 (none) to 21 (black on white)."""
    a, b = relative_luminance(fg), relative_luminance(bg)
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


def ink_on(background: str) -> str:
    """'#000000' or '#FFFFFF', whichever has the higher WCAG contrast on ``background``."""
    lum = relative_luminance(background)
    return "#000000" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "#FFFFFF"
