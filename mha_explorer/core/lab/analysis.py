"""After training: how much each head matters, how many can go, and which heads
form an induction circuit.

Heads are numbered layer-major across the model (layer 0's heads first), which
for a one-layer model is simply the head index.

Pruning is honest: the head to remove next is chosen on one held-out set and the
accuracy reported on another, fresh one, so "within 1 point" is not measured on
the data that picked the heads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from mha_explorer.core.lab.circuits import FORMED, Circuit, head_scores, last_layer_best, probe_batch
from mha_explorer.core.lab.train import LabRun, data_generator, eval_batch, evaluate, make_batch

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
    """Greedy pruning: ``order`` chosen on the selection set; ``accuracy[k]`` with
    ``order[:k]`` removed, k = 0..all heads, measured on a fresh report set
    (``selection_accuracy[k]`` on the selection set, for comparison)."""

    order: list[int]
    accuracy: list[float]
    selection_accuracy: list[float] = field(default_factory=list)

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


def pruning_sets(run: LabRun):
    """The selection set that chooses the heads and the report set that judges them:
    both held out from training, drawn from their own seeded streams, and neither is
    the evaluation batch of the curves."""
    size, seed = run.settings.eval_size, run.settings.seed
    return (make_batch(run.spec, size, data_generator(seed, "prune-select"), run.device),
            make_batch(run.spec, size, data_generator(seed, "prune-report"), run.device))


def prune(run: LabRun, check=None) -> Pruning:
    """Remove, one at a time, the remaining head whose removal costs the least accuracy
    on the selection set (re-measured after every removal), down to no heads; report
    each step's accuracy on the fresh report set. ``check()`` runs between trials
    (it may raise Cancelled)."""
    select, report = pruning_sets(run)
    n = run.spec.layers * run.spec.heads
    removed: list[int] = []
    chosen = [_accuracy(run, select, set())]
    accuracy = [_accuracy(run, report, set())]
    while len(removed) < n:
        trials = []
        for i in range(n):
            if i not in removed:
                if check is not None:
                    check()
                trials.append((_accuracy(run, select, {*removed, i}), -i))
        best_acc, neg_i = max(trials)  # highest accuracy left; ties: the lowest index
        removed.append(-neg_i)
        chosen.append(best_acc)
        accuracy.append(_accuracy(run, report, set(removed)))
    return Pruning(removed, accuracy, chosen)


def find_circuit(run: LabRun) -> Circuit:
    """The last layer's strongest prefix-matching head, the first-layer head it reads
    (the one whose removal lowers its prefix matching most, with two or more layers),
    and the held-out accuracy with every head of the last layer that matches prefixes
    (score above FORMED; at least the strongest) removed."""
    spec = run.spec
    probe = probe_batch(spec, run.settings.seed, run.device)
    prefix, previous = head_scores(run.model, probe)
    best, score = last_layer_best(prefix, spec)
    start = (spec.layers - 1) * spec.heads
    formed = [i for i in range(start, start + spec.heads) if prefix[i] > FORMED] or [best]
    reads: list[float] = []
    reader = reader_score = None
    if spec.layers > 1:
        for h in range(spec.heads):
            reads.append(head_scores(run.model, probe, _keep_mask(run, {h}))[0][best])
        reader = min(range(spec.heads), key=lambda h: (reads[h], h))
        reader_score = previous[reader]
    batch = eval_batch(spec, run.settings, run.device)
    return Circuit(best, score, reader, reader_score, reads, formed,
                   _accuracy(run, batch, set(formed)), _accuracy(run, batch, set()))


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


@torch.no_grad()
def probe_maps(run: LabRun, heads: list[int], sample: int = 0) -> tuple[np.ndarray, list[int]]:
    """Attention maps [len(heads), T, T] of the given heads (layer-major, every head
    kept) on repeated-symbols probe sequence ``sample``, and that sequence's tokens."""
    probe = probe_batch(run.spec, run.settings.seed, run.device)
    _logits, maps = run.model(probe[sample:sample + 1])
    flat = torch.cat([m[0] for m in maps])  # [layers * H, T, T]
    return flat[heads].float().cpu().numpy(), [int(t) for t in probe[sample]]
