"""Induction circuits, measured as Olsson et al. (2022) measure them: on sequences of
random symbols whose second half repeats the first, how much each head attends

- from a symbol in the repeat to the symbol that *followed* its earlier occurrence
  (prefix matching: what an induction head does), and
- from each symbol to the one just before it (previous token: what the earlier-layer
  head an induction head reads from does).

Both are mean attention weights in [0, 1], per head, layer-major.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mha_explorer.core.lab.lesson import FORMED
from mha_explorer.core.lab.model import LabModel, LabModelSpec

PROBE_SIZE = 64  # repeated random sequences the scores average over


def probe_batch(spec: LabModelSpec, seed: int, device: str = "cpu") -> torch.Tensor:
    """Tokens [PROBE_SIZE, 2n]: n random symbols, then the same n again. The first half
    has no repeated symbol when the vocabulary allows, so every symbol of the repeat
    has exactly one earlier occurrence."""
    g = torch.Generator()
    g.manual_seed(seed * 7919 + 17)
    n = spec.n
    if spec.vocab >= n:
        first = torch.argsort(torch.rand(PROBE_SIZE, spec.vocab, generator=g), dim=1)[:, :n]  # [P, n]
    else:
        first = torch.randint(0, spec.vocab, (PROBE_SIZE, n), generator=g)  # [P, n]
    return torch.cat([first, first], dim=1).to(device)  # [P, 2n]


def scores_from_maps(maps: list[torch.Tensor], n: int) -> tuple[list[float], list[float]]:
    """Prefix-matching and previous-token score of every head (layer-major) from the
    probe's attention maps ([P, H, 2n, 2n] per layer)."""
    T = 2 * n
    rows = torch.arange(n, T)  # queries in the repeat
    prefix_keys = rows - n + 1  # the symbol after the earlier occurrence
    prev_rows = torch.arange(1, T)
    prefix, previous = [], []
    for weights in maps:  # [P, H, T, T]
        w = weights.float()
        prefix += w[:, :, rows, prefix_keys].mean((0, 2)).tolist()  # [H]
        previous += w[:, :, prev_rows, prev_rows - 1].mean((0, 2)).tolist()  # [H]
    return prefix, previous


@torch.no_grad()
def head_scores(model: LabModel, probe: torch.Tensor, head_keep: torch.Tensor | None = None
                ) -> tuple[list[float], list[float]]:
    _logits, maps = model(probe, head_keep)
    return scores_from_maps(maps, model.spec.n)


@dataclass
class Circuit:
    """What the finished model's heads do (indices layer-major)."""

    induction_head: int  # the last layer's head with the highest prefix-matching score
    induction_score: float
    previous_head: int | None  # the first layer's head the induction head reads most (2+ layers)
    previous_score: float | None  # that head's previous-token score
    reads: list[float]  # per first-layer head: the induction head's score with that head removed
    removed: list[int]  # the last layer's prefix-matching heads, removed together below
    accuracy_without: float  # held-out accuracy with ``removed`` removed
    accuracy: float  # held-out accuracy with every head

    @property
    def formed(self) -> bool:
        return self.induction_score > FORMED

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def last_layer_best(prefix: list[float], spec: LabModelSpec) -> tuple[int, float]:
    """The last layer's head with the highest prefix-matching score, and the score."""
    start = (spec.layers - 1) * spec.heads
    tail = prefix[start:]
    best = max(range(len(tail)), key=lambda i: (tail[i], -i))
    return start + best, tail[best]


def formation_step(scores: list[tuple[int, list[float], list[float]]], spec: LabModelSpec) -> int | None:
    """The first evaluation step at which a last-layer head's prefix matching passed FORMED."""
    return next((step for step, prefix, _prev in scores if last_layer_best(prefix, spec)[1] > FORMED), None)
