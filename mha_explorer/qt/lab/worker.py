"""The lab's own training thread.

The worker lives on a QThread; a request arrives through a queued signal and
trains one model per head count, then ablates and prunes each. torch is
imported only on that thread, through mha_explorer.core.lab, the first time a
request runs. What leaves the thread is numpy and plain Python: progress at
most every PROGRESS_INTERVAL_S (the maps with it when they were refreshed),
each finished run's summary, and errors as messages, never exceptions. The
trained models stay here, so saving a run is a request to the worker too.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Signal, Slot

PROGRESS_INTERVAL_S = 0.1


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
        "final_entropy": list(run.final_entropy), "labels": _labels(run.spec, run.settings),
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


def _labels(spec, settings) -> list[str]:
    """The tokens of evaluation sample 0, the one whose maps are shown."""
    from mha_explorer.core.lab.tasks import symbols
    from mha_explorer.core.lab.train import eval_batch

    names = symbols(spec.vocab)
    tokens = eval_batch(spec, settings)[0][0]
    return [names[int(t)] for t in tokens]


class LabWorker(QObject):
    """Signals carry the head count so overlaid curves can be told apart."""

    started = Signal(int)  # head count
    progressed = Signal(int, object)  # head count, dict(step, steps, loss, accuracy, entropy, maps|None,
    #                                   labels of the maps' tokens)
    run_finished = Signal(int, object)  # head count, run_summary dict
    finished = Signal()  # every head count of the request is done
    failed = Signal(str)
    cancelled = Signal()
    warmed_up = Signal()
    saved = Signal(str, object)  # folder, config changes for the stage view (dict)

    def __init__(self) -> None:
        super().__init__()
        self._cancel = threading.Event()
        self._pause = threading.Event()
        self._runs: dict[int, tuple] = {}  # head count -> (LabRun, Ablation, Pruning)

    # called from the GUI thread -----------------------------------------
    def cancel(self) -> None:
        self._cancel.set()

    def set_paused(self, paused: bool) -> None:
        (self._pause.set if paused else self._pause.clear)()

    # on the worker thread ---------------------------------------------
    @Slot()
    def warm_up(self) -> None:
        """Import torch and the lab now, on this thread, so the first Train starts at once
        (imports and first calls hold the interpreter lock; better before anyone watches curves)."""
        try:
            from mha_explorer.core.lab.model import LabModelSpec
            from mha_explorer.core.lab.train import TrainSettings, train

            # a two-step run of a tiny model: torch's first forward, backward and optimiser
            # step initialise lazily, holding the interpreter lock for a few hundred ms
            train(LabModelSpec(vocab=2, n=2, d_model=4, heads=1),
                  TrainSettings(steps=2, batch=2, eval_every=1, eval_size=2))
        except Exception as exc:  # noqa: BLE001 - a broken torch install must not kill the window
            self.failed.emit(f"could not load torch: {exc}")
        else:
            self.warmed_up.emit()

    @Slot(object)
    def train(self, request: LabRequest) -> None:
        self._cancel.clear()
        try:
            from mha_explorer.core.lab.analysis import ablate, prune
            from mha_explorer.core.lab.model import LabModelSpec
            from mha_explorer.core.lab.train import TrainSettings, train
            from mha_explorer.core.trace import Cancelled

            settings = TrainSettings(steps=request.steps, seed=request.seed)
            for h in request.head_counts:
                spec = LabModelSpec(task=request.task, d_model=request.d_model, heads=h,
                                    layers=request.layers, mlp=request.mlp, positions=request.positions)
                self.started.emit(h)
                report = self._reporter(h, _labels(spec, settings))
                run = train(spec, settings, progress=report, pause=self._pause.is_set,
                            cancel=self._cancel.is_set, maps_every=2)
                ablation = ablate(run) if request.analyse else None
                pruning = prune(run) if request.analyse else None
                self._runs[h] = (run, ablation, pruning)
                self.run_finished.emit(h, run_summary(run, ablation, pruning))
        except Cancelled:
            self.cancelled.emit()
        except Exception as exc:  # noqa: BLE001 - every fault becomes a message
            self.failed.emit(f"{type(exc).__name__}: {exc}" if not isinstance(exc, ValueError) else str(exc))
        else:
            self.finished.emit()

    def _reporter(self, heads: int, labels: list[str]):
        last = [0.0]

        def report(event) -> None:
            now = time.perf_counter()
            if event.maps is None and event.step < event.steps and now - last[0] < PROGRESS_INTERVAL_S:
                return
            last[0] = now
            self.progressed.emit(heads, {"step": event.step, "steps": event.steps, "loss": event.loss,
                                         "accuracy": event.accuracy, "entropy": list(event.entropy_bits),
                                         "maps": event.maps, "labels": labels})
        return report

    @Slot(int, str)
    def save(self, heads: int, folder: str) -> None:
        try:
            from mha_explorer.core.lab.source import config_changes
            from mha_explorer.core.lab.store import save_run

            run, ablation, pruning = self._runs[heads]
            extra = {}
            if ablation is not None:
                extra["ablation"] = {"base_accuracy": ablation.base_accuracy, "drops": ablation.drops}
            if pruning is not None:
                extra["pruning"] = {"order": pruning.order, "accuracy": pruning.accuracy}
            save_run(run, folder, extra)
            self.saved.emit(folder, {**config_changes(run), "weights": "lab", "weights_path": folder,
                                     "layer": 1})
        except KeyError:
            self.failed.emit(f"no trained run with {heads} heads to save")
        except Exception as exc:  # noqa: BLE001
            self.failed.emit(f"could not save to {folder}: {exc}")

    @Slot(str)
    def load(self, folder: str) -> None:
        try:
            from mha_explorer.core.lab.analysis import Ablation, Pruning
            from mha_explorer.core.lab.store import load_run

            run, extra = load_run(folder)
            ab = extra.get("ablation")
            ablation = Ablation(ab["base_accuracy"], ab["drops"]) if ab else None
            pr = extra.get("pruning")
            pruning = Pruning(pr["order"], pr["accuracy"]) if pr else None
            h = run.spec.heads
            self._runs[h] = (run, ablation, pruning)
            self.run_finished.emit(h, run_summary(run, ablation, pruning))
            self.finished.emit()
        except Exception as exc:  # noqa: BLE001
            self.failed.emit(str(exc))
