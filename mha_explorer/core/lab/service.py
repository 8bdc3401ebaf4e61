"""The lab's training service: a process of its own that trains, ablates, prunes, saves
and loads lab runs on request, and answers with plain messages.

Why a process and not a thread of the window's: training a small model is mostly
Python between short torch calls, so a training thread holds the interpreter lock
much of the time, and on a busy machine the window's thread waited for it whenever
the operating system had set the training thread aside (stalls of 50-80 ms with two
other busy programs on two cores). Apart, they share no lock.

Two pipes join the window and the service: requests and their answers, and a
control pipe on which the window says pause, resume or cancel at any time (a thread
of the service listens to it, also while training is paused). No shared semaphores:
a window killed outright leaves none behind.

Requests ``(id, kind, *args)``: ``warm_up``, ``train`` (LabRequest), ``save`` (heads,
folder), ``load`` (folder), ``stop``. Answers: ``("started", h)``, ``("progressed", h,
dict)``, ``("run_finished", h, summary)``, ``("finished",)``, ``("cancelled",)``,
``("failed", message)``, ``("warmed_up",)``, ``("saved", folder, changes)``. Every
request ends with exactly one of finished, cancelled, failed, warmed_up or saved.
Control: ``("pause", bool)``, ``("cancel", id)`` (cancels requests up to that id).

The service ends itself, quietly, as soon as the window is gone: the control pipe
reaches its end, its parent process changes, or (Linux) the system's parent-death
signal arrives, whichever is first; while paused too.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field

PROGRESS_INTERVAL_S = 0.1
PARENT_POLL_S = 0.2
ENDS = frozenset({"finished", "cancelled", "failed", "warmed_up", "saved"})
STOP_GRACE_S = 0.1
STOP_WAIT_S = 3.0
# how much lower training's share of a busy CPU is than the window's: at an equal share on two
# cores, the Lab page's 20-40 ms updates waited behind the trainer's threads for 50-90 ms
SERVICE_NICE = 5


@dataclass(frozen=True)
class LabRequest:
    task: str
    head_counts: tuple[int, ...]
    d_model: int = 256
    steps: int = 200
    seed: int = 0
    layers: int = 1
    mlp: bool = False  # an MLP after each attention layer (a task may ask for one regardless)
    positions: str = "learned"
    analyse: bool = True  # ablation + pruning (+ the induction circuit) after each run
    extra: dict = field(default_factory=dict)


def run_summary(run, ablation=None, pruning=None, circuit=None) -> dict:
    """What the page shows of a finished run (numpy and Python numbers only)."""
    import numpy as np

    from mha_explorer.core.lab.analysis import head_maps

    heads = run.spec.layers * run.spec.heads
    out = {
        "heads": run.spec.heads, "layers": run.spec.layers, "task": run.spec.task,
        "d_model": run.spec.d_model,
        "curve": np.array(run.curve, dtype=np.float64).reshape(-1, 3),  # [points, 3]: step, loss, acc
        "entropy_steps": np.array([s for s, _ in run.entropy], dtype=np.int64),
        "entropy": np.array([b for _, b in run.entropy], dtype=np.float64),  # [points, heads]
        "score_steps": np.array([s for s, _p, _q in run.scores], dtype=np.int64),
        "prefix": np.array([p for _s, p, _q in run.scores], dtype=np.float64).reshape(-1, heads),
        "previous": np.array([q for _s, _p, q in run.scores], dtype=np.float64).reshape(-1, heads),
        "final_accuracy": run.final_accuracy, "steps_to_95": run.steps_to_goal, "seconds": run.seconds,
        "final_entropy": list(run.final_entropy), "labels": sample_labels(run.spec, run.settings),
    }
    if ablation is not None:
        out["ablation"] = {"base": ablation.base_accuracy, "drops": list(ablation.drops),
                           "ranking": ablation.ranking}
    if pruning is not None:
        survivors = pruning.survivors()
        out["pruning"] = {"order": list(pruning.order), "accuracy": list(pruning.accuracy),
                          "selection_accuracy": list(pruning.selection_accuracy),
                          "removable": pruning.removable, "survivors": survivors,
                          "survivor_maps": head_maps(run, survivors) if survivors else None}
    if circuit is not None:
        out["circuit"] = circuit_summary(run, circuit)
    return out


def circuit_summary(run, circuit) -> dict:
    """The circuit's numbers, and the maps of its heads on probe sequence 0."""
    from mha_explorer.core.lab.analysis import probe_maps
    from mha_explorer.core.lab.tasks import symbols

    shown = [circuit.induction_head] + ([circuit.previous_head] if circuit.previous_head is not None else [])
    maps, tokens = probe_maps(run, shown)
    names = symbols(run.spec.vocab)
    return {**circuit.to_dict(), "maps": maps, "labels": [names[int(t)] for t in tokens]}


def sample_labels(spec, settings) -> list[str]:
    """The tokens of evaluation sample 0, the one whose maps are shown."""
    from mha_explorer.core.lab.tasks import symbols
    from mha_explorer.core.lab.train import eval_batch

    names = symbols(spec.vocab)
    tokens = eval_batch(spec, settings)[0][0]
    return [names[int(t)] for t in tokens]


class LabService:
    """The requests, answered through ``send``; ``runs`` keeps each head count's
    trained model and analysis for saving. ``paused()`` and ``cancelled()`` say what
    the window asked for the request in hand."""

    def __init__(self, send, paused, cancelled) -> None:
        self.send, self.paused, self.cancelled = send, paused, cancelled
        self.runs: dict[int, tuple] = {}  # head count -> (LabRun, Ablation, Pruning)

    def handle(self, request: tuple) -> None:
        kind, *args = request
        try:
            getattr(self, f"do_{kind}")(*args)
        except Exception as exc:  # noqa: BLE001 - every fault becomes a message
            from mha_explorer.core.errors import Cancelled

            if isinstance(exc, Cancelled):
                self.send(("cancelled",))
                return
            message = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
            self.send(("failed", " ".join(message.split())))

    def check(self) -> None:
        """Raise Cancelled when the window cancelled the request in hand."""
        from mha_explorer.core.errors import Cancelled

        if self.cancelled():
            raise Cancelled()

    def do_warm_up(self) -> None:
        """Import torch and run two tiny steps: its first forward, backward and optimiser
        step initialise lazily, better before anyone watches curves."""
        from mha_explorer.core.lab.model import LabModelSpec
        from mha_explorer.core.lab.train import TrainSettings, train

        train(LabModelSpec(vocab=2, n=2, d_model=4, heads=1),
              TrainSettings(steps=2, batch=2, eval_every=1, eval_size=2))
        self.send(("warmed_up",))

    def do_train(self, request: LabRequest) -> None:
        from mha_explorer.core.lab.analysis import ablate, find_circuit, prune
        from mha_explorer.core.lab.model import LabModelSpec
        from mha_explorer.core.lab.tasks import check_task
        from mha_explorer.core.lab.train import TrainSettings, train

        task = check_task(request.task)
        settings = TrainSettings(steps=request.steps, seed=request.seed)
        for h in request.head_counts:
            spec = LabModelSpec(task=request.task, vocab=task.vocab, n=task.n, d_model=request.d_model,
                                heads=h, layers=request.layers, mlp=request.mlp or task.mlp,
                                positions=request.positions)
            self.send(("started", h))
            report = self._reporter(h, sample_labels(spec, settings))
            run = train(spec, settings, progress=report, pause=self.paused, cancel=self.cancelled,
                        maps_every=2)
            ablation = ablate(run) if request.analyse else None
            pruning = prune(run, check=self.check) if request.analyse else None
            circuit = find_circuit(run) if request.analyse else None
            self.runs[h] = (run, ablation, pruning)
            self.send(("run_finished", h, run_summary(run, ablation, pruning, circuit)))
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
                "entropy": list(event.entropy_bits), "maps": event.maps, "labels": labels,
                "prefix": list(event.prefix), "previous": list(event.previous)}))
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
            extra["pruning"] = {"order": pruning.order, "accuracy": pruning.accuracy,
                                "selection_accuracy": pruning.selection_accuracy}
        save_run(run, folder, extra)
        self.send(("saved", folder, {**config_changes(run), "weights": "lab", "weights_path": folder,
                                     "layer": 1}))

    def do_load(self, folder: str) -> None:
        from mha_explorer.core.lab.analysis import Ablation, Pruning, find_circuit
        from mha_explorer.core.lab.store import load_run

        run, extra = load_run(folder, check=self.check)
        ab, pr = extra.get("ablation"), extra.get("pruning")
        ablation = Ablation(ab["base_accuracy"], ab["drops"]) if ab else None
        pruning = Pruning(pr["order"], pr["accuracy"], pr.get("selection_accuracy", [])) if pr else None
        self.check()
        h = run.spec.heads
        self.runs[h] = (run, ablation, pruning)
        self.send(("run_finished", h, run_summary(run, ablation, pruning, find_circuit(run))))
        self.send(("finished",))


# the service's process ---------------------------------------------------------
def _die_with_parent() -> None:
    """Linux: the system sends SIGTERM when the process that started this one ends
    (one layer of several: see ``_Lifeline``)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            pr_set_pdeathsig = 1
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)


def _leave() -> None:
    """End this process now and quietly: nothing it holds needs tidying (the window
    that wanted its answers is gone)."""
    os._exit(0)


class _Lifeline(threading.Thread):
    """Listens to the control pipe (pause, cancel) and watches the parent: the pipe's
    end, or a new parent process id, ends the service at once."""

    def __init__(self, control, parent_pid: int):
        super().__init__(name="lab-control", daemon=True)
        self.control, self.parent_pid = control, parent_pid
        self.pause = threading.Event()
        self.cancelled_upto = -1
        self.current = 0

    def run(self) -> None:
        while True:
            try:
                ready = self.control.poll(PARENT_POLL_S)
                message = self.control.recv() if ready else None
            except (EOFError, OSError):
                _leave()
            if os.getppid() != self.parent_pid:
                _leave()
            if message is None:
                continue
            if message[0] == "pause":
                (self.pause.set if message[1] else self.pause.clear)()
            elif message[0] == "cancel":
                self.cancelled_upto = max(self.cancelled_upto, message[1])

    def cancelled(self) -> bool:
        return self.cancelled_upto >= self.current


def serve(conn, control, parent_pid: int) -> None:
    """The service process's main loop: one request at a time until "stop" or the
    window is gone."""
    _die_with_parent()
    if os.getppid() != parent_pid:  # gone before the signal was asked for
        _leave()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the window's to handle
    with contextlib.suppress(AttributeError, OSError):  # POSIX only; training just as fast alone
        os.nice(SERVICE_NICE)
    lifeline = _Lifeline(control, parent_pid)
    lifeline.start()

    def send(message: tuple) -> None:
        try:
            conn.send(message)
        except (OSError, EOFError, ValueError):  # the window's end is closed: it has gone
            _leave()

    service = LabService(send, lifeline.pause.is_set, lifeline.cancelled)
    while True:
        try:
            request_id, kind, *args = conn.recv()
        except (EOFError, OSError):
            _leave()
        if kind == "stop":
            _leave()
        lifeline.current = request_id
        service.handle((kind, *args))


class ServiceProcess:
    """The window's side of the service: starts it (again after it died), sends
    requests and control messages, and ends it. Requests and answers belong to one
    thread; pause, cancel and kill may come from another."""

    def __init__(self) -> None:
        # spawn, not fork: a forked copy of a process with Qt's threads is not safe
        self._context = multiprocessing.get_context("spawn")
        self.process = None
        self._conn = self._control = None
        self._next_id = 0
        self._lock = threading.Lock()  # the control pipe is written from two threads

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.is_alive()

    def ask(self, kind: str, *args) -> int:
        """Send one request (starting the process when needed); returns its id."""
        if not self.alive():
            self._start()
        self._next_id += 1
        self._conn.send((self._next_id, kind, *args))
        return self._next_id

    def answer(self) -> tuple:
        """The next answer; EOFError or OSError when the process has gone. It is then
        waited for: its pipe closes a moment before it can be reaped, and a request sent in
        that moment went to the pipe of a process on its way out instead of a fresh one."""
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            process = self.process
            if process is not None:
                process.join(STOP_WAIT_S)
                if process.is_alive():  # its pipe was closed while it lives on: end it
                    with contextlib.suppress(OSError, ValueError):
                        process.kill()
                    process.join(STOP_WAIT_S)
            raise

    def _start(self) -> None:
        self._close()
        ours, theirs = self._context.Pipe()
        control_in, control_out = self._context.Pipe(duplex=False)
        process = self._context.Process(target=serve, args=(theirs, control_in, os.getpid()),
                                        name="mha-explorer-lab", daemon=True)
        process.start()
        theirs.close()  # the child's ends: ours see EOF when the child is gone, and its
        control_in.close()  # control pipe ends when we do
        self.process, self._conn, self._control = process, ours, control_out

    def _tell(self, message: tuple) -> None:
        with self._lock:
            if self._control is not None:
                with contextlib.suppress(OSError, ValueError):
                    self._control.send(message)

    def pause(self, paused: bool) -> None:
        self._tell(("pause", paused))

    def cancel(self) -> None:
        """Cancel every request sent so far."""
        self._tell(("cancel", self._next_id))

    def kill(self) -> None:
        """End the process now, whatever it is doing (even stopped or stuck in a system
        call): a thread waiting for an answer gets EOF. Nothing in it needs tidying."""
        process = self.process
        if process is not None and process.is_alive():
            with contextlib.suppress(OSError, ValueError):
                process.kill()

    def stop(self) -> None:
        """End the process (after no thread waits for answers any more)."""
        process = self.process
        if process is not None:
            with contextlib.suppress(OSError, ValueError):
                self._conn.send((0, "stop"))
            # it has no request in hand: a prompt exit, or an end now rather than a wait for
            # torch's tear-down (most of a second)
            process.join(STOP_GRACE_S)
            if process.is_alive():
                process.kill()
                process.join(STOP_WAIT_S)
        self._close()

    def _close(self) -> None:
        with self._lock:
            for conn in (self._conn, self._control):
                if conn is not None:
                    with contextlib.suppress(OSError):
                        conn.close()
            self.process, self._conn, self._control = None, None, None
