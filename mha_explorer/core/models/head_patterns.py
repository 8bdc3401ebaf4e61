"""What a decoder's head does, as a few numbers per attention map (numpy only, any model).

For a map A of shape [..., T, T] whose rows are softmax weights over the keys
(row i: how query i spreads its attention; a causal model leaves the cells right
of the diagonal at 0), each score is a mean over query rows:

- ``previous_token``: A[i, i−1] over rows i ≥ 1, the weight on the token just before.
- ``first_token``: A[i, 0] over every row, the weight on the first token (<bos>):
  a head that parks its attention there is an "attention sink" (it reads nothing).
- ``self``: A[i, i], the weight on the token itself.
- ``induction`` (prefix matching): over the rows whose token occurred earlier in
  the text, the weight on the tokens that followed those earlier occurrences (at
  "A B ... A", the weight from the second A on the first B). It is None when the
  text repeats nothing, so no query can show it. A successor that is the query
  itself ("A A") does not count: that is ``self``.

Every score lies in [0, 1]; ``entropy_bits`` is the heads panel's entropy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mha_explorer.core.models.patterns import entropy_bits  # the heads panel's entropy, one rule

PATTERN_NAMES = ("previous_token", "first_token", "self", "induction")
SHORT_NAMES = {"previous_token": "prev", "first_token": "first", "self": "self", "induction": "ind"}

__all__ = ["PATTERN_NAMES", "entropy_bits", "first_token", "induction", "induction_targets",
           "pattern_scores", "previous_token", "self_weight"]


def _square(maps: np.ndarray) -> np.ndarray:
    a = np.asarray(maps, dtype=np.float64)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"maps must be [..., T, T], got shape {a.shape}")
    return a


def previous_token(maps: np.ndarray) -> np.ndarray:
    """[...]: the mean weight on the previous token (0 for a single token)."""
    a = _square(maps)
    T = a.shape[-1]
    if T < 2:
        return np.zeros(a.shape[:-2])
    rows = np.arange(1, T)
    return a[..., rows, rows - 1].mean(axis=-1)


def first_token(maps: np.ndarray) -> np.ndarray:
    """[...]: the mean weight on the first token (<bos>)."""
    return _square(maps)[..., :, 0].mean(axis=-1)


def self_weight(maps: np.ndarray) -> np.ndarray:
    """[...]: the mean weight of each token on itself."""
    a = _square(maps)
    rows = np.arange(a.shape[-1])
    return a[..., rows, rows].mean(axis=-1)


def induction_targets(ids: Sequence[int]) -> dict[int, list[int]]:
    """query position -> the positions that followed the earlier occurrences of its token
    (queries whose token is new, or whose only successor is themselves, are left out)."""
    seen: dict[int, list[int]] = {}
    targets: dict[int, list[int]] = {}
    for i, token in enumerate(ids):
        earlier = [j + 1 for j in seen.get(token, ()) if j + 1 < i]
        if earlier:
            targets[i] = earlier
        seen.setdefault(token, []).append(i)
    return targets


def induction(maps: np.ndarray, ids: Sequence[int]) -> np.ndarray | None:
    """[...]: the mean over repeated tokens of the weight on what followed their earlier
    occurrences; None when the text repeats nothing."""
    a = _square(maps)
    if len(ids) != a.shape[-1]:
        raise ValueError(f"{len(ids)} token ids for maps of {a.shape[-1]} tokens")
    targets = induction_targets(ids)
    if not targets:
        return None
    per_query = [a[..., i, keys].sum(axis=-1) for i, keys in targets.items()]  # each [...]
    return np.mean(per_query, axis=0)


def pattern_scores(maps: np.ndarray, ids: Sequence[int]) -> dict[str, np.ndarray | None]:
    """Each pattern's score for maps [..., T, T] of the text ``ids`` (induction may be None)."""
    return {"previous_token": previous_token(maps), "first_token": first_token(maps),
            "self": self_weight(maps), "induction": induction(maps, ids)}
