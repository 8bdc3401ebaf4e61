"""After training: how much each head matters, and how many can go.

Heads are numbered layer-major across the model (layer 0's heads first), which
for a one-layer model is simply the head index.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mha_explorer.core.lab.train import LabRun, eval_batch, evaluate

TOLERANCE = 0.01  # "accuracy drops by more than 1 %": one percentage point of held-out accuracy


@dataclass
class Ablation:
    base_accuracy: float
    drops: list[float]  # per head: base accuracy minus accuracy with that head's context zeroed

    @property
    def ranking(self) -> list[int]:
        """Heads, most important first (ties: lower index first)."""
        return sorted(range(len(self.drops)), key=lambda i: (-self.drops[i], i))


@dataclass
class Pruning:
    """Greedy pruning: ``accuracy[k]`` with ``order[:k]`` removed, k = 0..all heads."""

    order: list[int]
    accuracy: list[float]

    @property
    def removable(self) -> int:
        """How many heads go before accuracy first drops more than TOLERANCE below the start."""
        floor = self.accuracy[0] - TOLERANCE
        k = 0
        while k + 1 < len(self.accuracy) and self.accuracy[k + 1] >= floor:
            k += 1
        return k

    def survivors(self) -> list[int]:
        """The heads still there after removing ``removable`` of them."""
        gone = set(self.order[: self.removable])
        return [i for i in range(len(self.order)) if i not in gone]


def _keep_mask(run: LabRun, removed: set[int]) -> torch.Tensor:
    spec = run.spec
    keep = torch.ones(spec.layers * spec.heads, device=run.device)
    for i in removed:
        keep[i] = 0.0
    return keep.view(spec.layers, spec.heads)  # [layers, H]


def _accuracy(run: LabRun, batch, removed: set[int]) -> float:
    return evaluate(run.model, batch, _keep_mask(run, removed))[0]


def ablate(run: LabRun) -> Ablation:
    """Zero one head's context at a time on the run's evaluation batch."""
    batch = eval_batch(run.spec, run.settings, run.device)
    base = _accuracy(run, batch, set())
    n = run.spec.layers * run.spec.heads
    return Ablation(base, [base - _accuracy(run, batch, {i}) for i in range(n)])


def prune(run: LabRun) -> Pruning:
    """Remove, one at a time, the remaining head whose removal costs the least accuracy
    (re-measured after every removal), down to no heads."""
    batch = eval_batch(run.spec, run.settings, run.device)
    n = run.spec.layers * run.spec.heads
    removed: list[int] = []
    accuracy = [_accuracy(run, batch, set())]
    while len(removed) < n:
        trials = [(_accuracy(run, batch, {*removed, i}), -i) for i in range(n) if i not in removed]
        best_acc, neg_i = max(trials)  # highest accuracy left; ties: the lowest index
        removed.append(-neg_i)
        accuracy.append(best_acc)
    return Pruning(removed, accuracy)


@torch.no_grad()
def head_maps(run: LabRun, heads: list[int], sample: int = 0) -> np.ndarray:
    """Attention maps [len(heads), T, T] of evaluation sample ``sample`` with only
    ``heads`` kept (the rest removed), as float32 numpy."""
    batch = eval_batch(run.spec, run.settings, run.device)
    n = run.spec.layers * run.spec.heads
    keep = _keep_mask(run, set(range(n)) - set(heads))
    _acc, _bits, maps = evaluate(run.model, batch, keep)
    flat = torch.cat([m[sample] for m in maps])  # [layers * H, T, T]
    return flat[heads].float().cpu().numpy()
