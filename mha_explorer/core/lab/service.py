"""The lab's training service: a process of its own that trains, ablates, prunes, saves
and loads lab runs on request, and answers with plain messages.

Why a process and not a thread of the window's: training a small model is mostly
Python between short torch calls, so a training thread holds the interpreter lock
much of the time, and on a busy machine the window's thread waited for it whenever
the operating system had set the training thread aside (stalls of 50-80 ms with two
other busy programs on two cores). Apart, they share no lock.

Requests (tuples through a pipe): ``("warm_up",)``, ``("train", LabRequest)``,
``("save", heads, folder)``, ``("load", folder)``, ``("stop",)``. Answers:
``("started", h)``, ``("progressed", h, dict)``, ``("run_finished", h, summary)``,
``("finished",)``, ``("cancelled",)``, ``("failed", message)``, ``("warmed_up",)``,
``("saved", folder, changes)``. Every request ends with exactly one of finished,
cancelled, failed, warmed_up or saved. Pause and cancel are shared events the window
sets at any time. What crosses is numpy arrays and Python numbers; the trained models
stay here, and a saved run is safetensors + JSON like any other.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field

PROGRESS_INTERVAL_S = 0.1
ENDS = frozenset({"finished", "cancelled", "failed", "warmed_up", "saved"})


@dataclass(frozen=True)
class LabRequest:
    task: str
    head_counts: tuple[int, ...]
    d_model: int = 256
    steps: int = 200
    seed: int = 0
    layers: int = 1
    mlp: bool = False
    positions: str = "learned"
    analyse: bool = True  # ablation + pruning after each run
    extra: dict = field(default_factory=dict)


def run_summary(run, ablation=None, pruning=None) -> dict:
    """What the page shows of a finished run (numpy and Python numbers only)."""
    import numpy as np

    from mha_explorer.core.lab.analysis import head_maps

    out = {
        "heads": run.spec.heads, "layers": run.spec.layers, "task": run.spec.task,
        "curve": np.array(run.curve, dtype=np.float64).reshape(-1, 3),  # [points, 3]: step, loss, acc
        "entropy_steps": np.array([s for s, _ in run.entropy], dtype=np.int64),
        "entropy": np.array([b for _, b in run.entropy], dtype=np.float64),  # [points, heads]
        "final_accuracy": run.final_accuracy, "steps_to_95": run.steps_to_goal, "seconds": run.seconds,
        "final_entropy": list(run.final_entropy), "labels": sample_labels(run.spec, run.settings),
    }
    if ablation is not None:
        out["ablation"] = {"base": ablation.base_accuracy, "drops": list(ablation.drops),
                           "ranking": ablation.ranking}
    if pruning is not None:
        survivors = pruning.survivors()
        out["pruning"] = {"order": list(pruning.order), "accuracy": list(pruning.accuracy),
                          "removable": pruning.removable, "survivors": survivors,
                          "survivor_maps": head_maps(run, survivors) if survivors else None}
    return out


def sample_labels(spec, settings) -> list[str]:
    """The tokens of evaluation sample 0, the one whose maps are shown."""
    from mha_explorer.core.lab.tasks import symbols
    from mha_explorer.core.lab.train import eval_batch

    names = symbols(spec.vocab)
    tokens = eval_batch(spec, settings)[0][0]
    return [names[int(t)] for t in tokens]


class LabService:
    """The requests, answered through ``send``; ``runs`` keeps each head count's
    trained model and analysis for saving."""

    def __init__(self, send, pause, cancel) -> None:
        self.send, self.pause, self.cancel = send, pause, cancel
        self.runs: dict[int, tuple] = {}  # head count -> (LabRun, Ablation, Pruning)

    def handle(self, request: tuple) -> None:
        kind, *args = request
        try:
            getattr(self, f"do_{kind}")(*args)
        except Exception as exc:  # noqa: BLE001 - every fault becomes a message
            message = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
            self.send(("failed", message))

    def do_warm_up(self) -> None:
        """Import torch and run two tiny steps: its first forward, backward and optimiser
        step initialise lazily, better before anyone watches curves."""
        from mha_explorer.core.lab.model import LabModelSpec
        from mha_explorer.core.lab.train import TrainSettings, train

        train(LabModelSpec(vocab=2, n=2, d_model=4, heads=1),
              TrainSettings(steps=2, batch=2, eval_every=1, eval_size=2))
        self.send(("warmed_up",))

    def do_train(self, request: LabRequest) -> None:
        from mha_explorer.core.errors import Cancelled
        from mha_explorer.core.lab.analysis import ablate, prune
        from mha_explorer.core.lab.model import LabModelSpec
        from mha_explorer.core.lab.train import TrainSettings, train

        settings = TrainSettings(steps=request.steps, seed=request.seed)
        try:
            for h in request.head_counts:
                spec = LabModelSpec(task=request.task, d_model=request.d_model, heads=h,
                                    layers=request.layers, mlp=request.mlp, positions=request.positions)
                self.send(("started", h))
                report = self._reporter(h, sample_labels(spec, settings))
                run = train(spec, settings, progress=report, pause=self.pause.is_set,
                            cancel=self.cancel.is_set, maps_every=2)
                ablation = ablate(run) if request.analyse else None
                pruning = prune(run) if request.analyse else None
                self.runs[h] = (run, ablation, pruning)
                self.send(("run_finished", h, run_summary(run, ablation, pruning)))
        except Cancelled:
            self.send(("cancelled",))
        else:
            self.send(("finished",))

    def _reporter(self, heads: int, labels: list[str]):
        last = [0.0]

        def report(event) -> None:
            now = time.perf_counter()
            if event.maps is None and event.step < event.steps and now - last[0] < PROGRESS_INTERVAL_S:
                return
            last[0] = now
            self.send(("progressed", heads, {
                "step": event.step, "steps": event.steps, "loss": event.loss, "accuracy": event.accuracy,
                "entropy": list(event.entropy_bits), "maps": event.maps, "labels": labels}))
        return report

    def do_save(self, heads: int, folder: str) -> None:
        from mha_explorer.core.lab.source import config_changes
        from mha_explorer.core.lab.store import save_run

        if heads not in self.runs:
            raise ValueError(f"no trained run with {heads} heads to save")
        run, ablation, pruning = self.runs[heads]
        extra = {}
        if ablation is not None:
            extra["ablation"] = {"base_accuracy": ablation.base_accuracy, "drops": ablation.drops}
        if pruning is not None:
            extra["pruning"] = {"order": pruning.order, "accuracy": pruning.accuracy}
        try:
            save_run(run, folder, extra)
        except Exception as exc:  # noqa: BLE001
            raise ValueError(f"could not save to {folder}: {exc}") from None
        self.send(("saved", folder, {**config_changes(run), "weights": "lab", "weights_path": folder,
                                     "layer": 1}))

    def do_load(self, folder: str) -> None:
        from mha_explorer.core.lab.analysis import Ablation, Pruning
        from mha_explorer.core.lab.store import load_run

        try:
            run, extra = load_run(folder)
        except Exception as exc:  # noqa: BLE001
            raise ValueError(str(exc)) from None
        ab, pr = extra.get("ablation"), extra.get("pruning")
        ablation = Ablation(ab["base_accuracy"], ab["drops"]) if ab else None
        pruning = Pruning(pr["order"], pr["accuracy"]) if pr else None
        h = run.spec.heads
        self.runs[h] = (run, ablation, pruning)
        self.send(("run_finished", h, run_summary(run, ablation, pruning)))
        self.send(("finished",))


def serve(conn, pause, cancel) -> None:
    """The training process's main loop: one request at a time until "stop" or the
    window's end of the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the window's to handle
    service = LabService(conn.send, pause, cancel)
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request[0] == "stop":
            return
        service.handle(request)
