"""Training a lab model: AdamW on freshly generated batches, judged on a fixed
held-out evaluation batch.

Deterministic for a seed on the CPU: the weights come from ``torch.manual_seed``
and the data from their own seeded generators (one for training batches, one
for the evaluation batch), so two runs with the same settings give identical
numbers.
"""

from __future__ import annotations

import functools
import os
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from mha_explorer.core.errors import Cancelled
from mha_explorer.core.lab.circuits import head_scores, last_layer_best, probe_batch
from mha_explorer.core.lab.model import LabModel, LabModelSpec
from mha_explorer.core.lab.tasks import LAYOUT_DRAWS, build, check_task

GOAL = 0.95  # the held-out accuracy that counts as learned
PAUSE_POLL_S = 0.05


@dataclass(frozen=True)
class TrainSettings:
    steps: int = 200
    batch: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup: int = 20
    seed: int = 0
    eval_every: int = 10  # steps between held-out evaluations (and curve points)
    eval_size: int = 256  # sequences in the fixed evaluation batch
    device: str = "auto"

    def __post_init__(self) -> None:
        for name in ("steps", "batch", "eval_every", "eval_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}")
        if not (isinstance(self.seed, int) and self.seed >= 0):
            raise ValueError(f"the seed must be a whole number of at least 0, got {self.seed!r}")
        if not self.lr > 0:
            raise ValueError(f"the learning rate must be positive, got {self.lr!r}")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class LabProgress:
    """What a running training reports (numpy and Python numbers only)."""

    step: int
    steps: int
    loss: float
    accuracy: float  # held-out, at the latest evaluation
    entropy_bits: list[float]  # per head (layer-major), at the latest evaluation
    maps: np.ndarray | None = None  # [layers, H, T, T] for evaluation sample 0, when refreshed
    prefix: list[float] = field(default_factory=list)  # per head: prefix-matching score (circuits)
    previous: list[float] = field(default_factory=list)  # per head: previous-token score


@dataclass
class LabRun:
    """A trained model and what was measured while training it."""

    spec: LabModelSpec
    settings: TrainSettings
    model: LabModel
    curve: list[tuple[int, float, float]] = field(default_factory=list)  # step, loss, held-out acc
    entropy: list[tuple[int, list[float]]] = field(default_factory=list)  # step, bits per head
    # step, per head prefix-matching and previous-token scores on the repeated-symbols probe
    scores: list[tuple[int, list[float], list[float]]] = field(default_factory=list)
    seconds: float = 0.0
    device: str = "cpu"

    @property
    def final_accuracy(self) -> float:
        return self.curve[-1][2] if self.curve else 0.0

    @property
    def steps_to_goal(self) -> int | None:
        return next((step for step, _loss, acc in self.curve if acc >= GOAL), None)

    @property
    def final_entropy(self) -> list[float]:
        return self.entropy[-1][1] if self.entropy else []

    def prefix_matching(self) -> list[tuple[int, float]]:
        """(step, the best last-layer head's prefix-matching score) at every evaluation."""
        return [(step, last_layer_best(prefix, self.spec)[1]) for step, prefix, _prev in self.scores]


@functools.lru_cache(maxsize=1)
def cpu_threads() -> int:
    """The cores this process may use, less those other processes keep busy.

    Decided once, before our own training loads the machine: on a shared machine
    a torch thread per core loses badly whenever another process takes a core
    (the threads wait on each other), so busy cores are left out.
    """
    try:
        cores = max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        cores = max(1, os.cpu_count() or 1)
    try:
        busy = os.getloadavg()[0]
    except OSError:
        busy = 0.0
    return max(1, min(cores, round(cores - busy)))


@contextmanager
def training_threads(device: str) -> Iterator[None]:
    """Torch's thread count for one training loop only: on the CPU the cores left free
    (``cpu_threads``), never more than the caller had, and the caller's count again
    afterwards. Torch's count belongs to the whole process, so a count left behind would
    decide the threads of whatever the process computes next (a command's caller, the
    window, a test) by the load at the moment some training started."""
    before = torch.get_num_threads()
    if device == "cpu":
        torch.set_num_threads(min(before, cpu_threads()))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def pick_device(name: str) -> str:
    if name in ("auto", "cuda") and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def data_generator(seed: int, purpose: str) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(zlib.crc32(f"{seed}:{purpose}".encode()))
    return g


def make_batch(spec: LabModelSpec, size: int, g: torch.Generator, device: str):
    """Tokens, targets [B, T] and the scored positions [B, T] on ``device``."""
    draws = torch.randint(0, spec.vocab, (size, spec.seq), generator=g).numpy()
    # only the tasks that place a repeat draw more, so the others' streams stay as they were
    layout = (torch.randint(0, 1 << 30, (size, LAYOUT_DRAWS), generator=g).numpy()
              if check_task(spec.task).layout else None)
    inputs, targets, scored = build(spec.task, draws, spec.vocab, layout)
    return tuple(torch.from_numpy(a).to(device) for a in (inputs, targets, scored))


def eval_batch(spec: LabModelSpec, settings: TrainSettings, device: str = "cpu"):
    """The fixed held-out batch of a run (same seed, same batch)."""
    return make_batch(spec, settings.eval_size, data_generator(settings.seed, "eval"), device)


def entropy_bits(maps: list[torch.Tensor], scored: torch.Tensor) -> list[float]:
    """Mean attention entropy (bits) of each head over the scored query rows."""
    rows = scored.float()[:, None, :]  # [B, 1, T]
    out = []
    for weights in maps:  # [B, H, T, T]
        h = -torch.special.xlogy(weights, weights).sum(-1) / np.log(2.0)  # [B, H, T]
        per_head = (h * rows).sum((0, 2)) / rows.sum((0, 2)).clamp_min(1)  # [H]
        out.extend(float(v) for v in per_head)
    return out


@torch.no_grad()
def evaluate(model: LabModel, batch, head_keep: torch.Tensor | None = None):
    """Held-out accuracy over the scored positions, the per-head entropy and the maps."""
    tokens, targets, scored = batch
    logits, maps = model(tokens, head_keep)
    right = (logits.argmax(-1) == targets) & scored
    accuracy = float(right.sum()) / max(1, int(scored.sum()))
    return accuracy, entropy_bits(maps, scored), maps


def _lr_at(step: int, settings: TrainSettings) -> float:
    return settings.lr * min(1.0, (step + 1) / max(1, settings.warmup))


def _wait_while_paused(pause, cancel) -> None:
    while pause is not None and pause():
        if cancel is not None and cancel():
            raise Cancelled()
        time.sleep(PAUSE_POLL_S)


def train(spec: LabModelSpec, settings: TrainSettings, *,
          progress: Callable[[LabProgress], None] | None = None,
          pause: Callable[[], bool] | None = None,
          cancel: Callable[[], bool] | None = None,
          maps_every: int = 1) -> LabRun:
    """Train a fresh model. ``progress`` hears about every evaluation (the maps every
    ``maps_every`` evaluations); ``pause()`` true holds the loop; ``cancel()`` true raises
    Cancelled between steps."""
    device = pick_device(settings.device)
    with training_threads(device):
        return _train(spec, settings, device, progress, pause, cancel, maps_every)


def _train(spec: LabModelSpec, settings: TrainSettings, device: str,
           progress: Callable[[LabProgress], None] | None, pause: Callable[[], bool] | None,
           cancel: Callable[[], bool] | None, maps_every: int) -> LabRun:
    torch.manual_seed(settings.seed)
    model = LabModel(spec).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
    train_g = data_generator(settings.seed, "train")
    held_out = eval_batch(spec, settings, device)
    probe = probe_batch(spec, settings.seed, device)
    run = LabRun(spec, settings, model, device=device)
    start = time.perf_counter()
    loss_sum, loss_n = 0.0, 0
    for step in range(1, settings.steps + 1):
        if cancel is not None and cancel():
            raise Cancelled()
        _wait_while_paused(pause, cancel)
        tokens, targets, scored = make_batch(spec, settings.batch, train_g, device)
        logits, _maps = model(tokens)
        loss = F.cross_entropy(logits[scored], targets[scored])
        for group in opt.param_groups:
            group["lr"] = _lr_at(step - 1, settings)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss_sum, loss_n = loss_sum + float(loss.detach()), loss_n + 1
        if step % settings.eval_every == 0 or step == settings.steps:
            model.eval()
            accuracy, bits, maps = evaluate(model, held_out)
            prefix, previous = head_scores(model, probe)
            model.train()
            mean_loss = loss_sum / loss_n  # the training loss since the last point
            loss_sum, loss_n = 0.0, 0
            run.curve.append((step, mean_loss, accuracy))
            run.entropy.append((step, bits))
            run.scores.append((step, prefix, previous))
            if progress is not None:
                point = len(run.curve)
                shown = (np.stack([m[0].float().cpu().numpy() for m in maps])  # [layers, H, T, T]
                         if point % maps_every == 0 or step == settings.steps else None)
                progress(LabProgress(step, settings.steps, mean_loss, accuracy, bits, shown,
                                     prefix, previous))
    run.seconds = time.perf_counter() - start
    model.eval()
    return run


def sweep(spec: LabModelSpec, settings: TrainSettings, head_counts: list[int], *,
          progress: Callable[[int, LabProgress], None] | None = None,
          pause: Callable[[], bool] | None = None,
          cancel: Callable[[], bool] | None = None) -> list[LabRun]:
    """Train one model per head count, all else equal. ``progress(heads, event)``."""
    runs = []
    for h in head_counts:
        spec_h = LabModelSpec(**{**spec.to_dict(), "heads": h})
        report = None if progress is None else (lambda event, h=h: progress(h, event))
        runs.append(train(spec_h, settings, progress=report, pause=pause, cancel=cancel))
    return runs
