"""What a head does, as six numbers per attention map (numpy only, any weights).

For a map A of shape [T, S] whose rows are softmax weights (row i: how query i
spreads its attention over the keys), each score is a mean over query rows:

- ``previous_token``: mean over rows i ≥ 1 of A[i, i−1], the weight on the token
  just before. 1.0 for a perfect previous-token head.
- ``next_token``: mean over rows i ≤ S−2 of A[i, i+1], the weight on the next token.
- ``self``: mean over rows of A[i, i], the weight on the token itself.
- ``first_token``: mean over rows of A[i, 0], the weight on the first token
  ([CLS] in BERT); a head parking its attention there is a "sink" (a no-op).
- ``sep``: mean over rows of the total weight on [SEP] positions (0 without any).
- ``broad``: ``entropy_bits`` divided by log₂ S: 0 when each query looks at one
  key, 1 when it spreads evenly over all of them.

``entropy_bits`` is the mean over rows of −Σ_j A[i, j]·log₂ A[i, j] (the heads
panel's entropy, from ``core/head_maps.py``).
Every score lies in [0, 1] (entropy in [0, log₂ S]); rows of zeros (a fully masked
query) count as no attention. Indices follow the keys, so for T = S the diagonal is
the token itself.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

PATTERN_NAMES = ("previous_token", "next_token", "self", "first_token", "sep", "broad")
SHORT_NAMES = {"previous_token": "prev", "next_token": "next", "self": "self",
               "first_token": "first", "sep": "sep", "broad": "broad"}
SEP_TOKEN = "[SEP]"


def row_entropy_bits(weights: np.ndarray, keep: np.ndarray) -> float:
    """Mean entropy in bits of the rows of ``weights`` [rows, S] where ``keep``.

    Masked rows hold zeros rather than a distribution, so they are left out.
    """
    rows = weights[keep]
    if not rows.size:
        return float("nan")
    # p·log2(max(p, tiny)) is exactly 0 where p = 0, without a masked log
    logs = np.log2(np.maximum(rows, np.finfo(rows.dtype).tiny))
    logs *= rows
    return max(0.0, float(-logs.sum(axis=1).mean()))  # rounding must not print "-0.00"


def _diagonal_mean(maps: np.ndarray, offset: int) -> np.ndarray:
    """Mean over rows of A[i, i + offset] where that key exists; [...] for maps [..., T, S]."""
    T, S = maps.shape[-2:]
    rows = np.arange(T)
    keys = rows + offset
    ok = (keys >= 0) & (keys < S)
    if not ok.any():
        return np.zeros(maps.shape[:-2])
    return maps[..., rows[ok], keys[ok]].mean(axis=-1)


def entropy_bits(maps: np.ndarray) -> np.ndarray:
    """[...]: mean over rows of each row's entropy in bits, for maps [..., T, S]."""
    a = np.asarray(maps, dtype=np.float64)
    T, S = a.shape[-2:]
    every_row = np.ones(T, dtype=bool)
    flat = a.reshape(-1, T, S)  # [maps, T, S]
    per_map = np.array([row_entropy_bits(m, every_row) for m in flat])  # [maps]
    return per_map.reshape(a.shape[:-2])  # [...]: the maps' leading axes again


def scores(maps: np.ndarray, tokens_kv: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Each pattern's score for maps [..., T, S] (e.g. [H, T, S] -> arrays of H scores).

    ``tokens_kv`` are the key labels; [SEP] positions are found among them.
    """
    a = np.asarray(maps, dtype=np.float64)
    S = a.shape[-1]
    if tokens_kv is not None and len(tokens_kv) != S:
        raise ValueError(f"{len(tokens_kv)} key labels for maps with {S} keys")
    sep = np.array([t == SEP_TOKEN for t in tokens_kv]) if tokens_kv is not None else np.zeros(S, bool)
    broad = entropy_bits(a) / np.log2(S) if S > 1 else np.zeros(a.shape[:-2])
    return {
        "previous_token": _diagonal_mean(a, -1),
        "next_token": _diagonal_mean(a, 1),
        "self": _diagonal_mean(a, 0),
        "first_token": a[..., :, 0].mean(axis=-1),
        "sep": a[..., :, sep].sum(axis=-1).mean(axis=-1),
        "broad": broad,
    }


def head_scores(maps: np.ndarray, tokens_kv: Sequence[str] | None = None) -> list[dict[str, float]]:
    """One dict of the six scores per head, for maps [H, T, S]."""
    table = scores(maps, tokens_kv)
    return [{name: float(table[name][h]) for name in PATTERN_NAMES} for h in range(maps.shape[0])]


def strongest(head: dict[str, float], exclude: Sequence[str] = ("broad",)) -> tuple[str, float]:
    """The head's highest score (broad excluded by default: it is a spread, not a place)."""
    name = max((n for n in PATTERN_NAMES if n not in exclude), key=lambda n: head[n])
    return name, head[name]


def badge(head: dict[str, float]) -> str:
    """A short label for a map, e.g. "prev 0.98"."""
    name, value = strongest(head)
    return f"{SHORT_NAMES[name]} {value:.2f}"
