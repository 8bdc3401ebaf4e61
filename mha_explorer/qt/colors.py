"""One colour per named dimension, the same in every panel.

Chosen from the Okabe–Ito palette so the dims stay distinguishable for
colour-blind readers and on washed-out projectors.
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


def dim_color(dim: str) -> str:
    return DIM_COLORS.get(dim, "#7F7F7F")


def dims_html(dims, sizes=None) -> str:
    """'[B, T, D]' as rich text, each name in its colour, sizes after a colon."""
    parts = []
    for i, d in enumerate(dims):
        label = f"{d}={sizes[i]:,}" if sizes is not None else d
        parts.append(f'<span style="color:{dim_color(d)}; font-weight:600">{label}</span>')
    return "[" + ", ".join(parts) + "]"
