"""The Lab page: pick a task, train one head count or sweep several, watch the
curves, entropies and maps live, then read the ablation ranking and pruning curve.

Training runs in a process of its own, asked and listened to by the page's worker
thread (``LabWorker``); the page only receives numpy arrays and Python numbers and
draws them.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QThread, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QHBoxLayout,
    QSizePolicy,
    QWidget,
)

from mha_explorer.core.lab.lesson import head_count_story, head_title, pruning_answer
from mha_explorer.qt.lab import tables
from mha_explorer.qt.lab.controls import LabControls
from mha_explorer.qt.lab.plots import color_for
from mha_explorer.qt.lab.views import LATER_VIEWS, LabViews
from mha_explorer.qt.lab.worker import LabRequest, LabWorker
from mha_explorer.qt.staggered import StaggeredRefresh

SHUTDOWN_WAIT_MS = 400  # the process is ended first, so the thread has its answer (EOF) at once
CANCEL_GRACE_MS = 2_000  # a cancel not answered by then ends the process (a new one starts on demand)


class LabPage(QWidget):
    """Signals: ``stage_view_requested(dict)`` carries the config changes that open a
    saved run's layer in the stage view (weights "lab", weights_path, layer, shapes);
    ``status_message(str)`` a line for the status bar."""

    stage_view_requested = Signal(object)
    status_message = Signal(str)
    _train_requested = Signal(object)
    _save_requested = Signal(int, str)
    _load_requested = Signal(str)
    _warm_up_requested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._summaries: dict[int, dict] = {}
        self._live: dict[int, dict[str, list]] = {}
        self._order: list[int] = []  # head counts in the order they were trained (colours)
        self._running = False
        self._job = "training"  # what the running request does, for the progress line
        self._cancel_pending = 0  # counts cancels, so an overdue check knows which one it is for
        self._layers_of: dict[int, int] = {}  # head count -> layers of the run in hand
        self._stage_after_save = False
        self._ready = False  # torch loaded in the training process
        self._refresh = StaggeredRefresh(self)
        self._build_controls()
        self._build_views()
        self._start_worker()
        self._show_task()
        self._set_running(False)

    # building ---------------------------------------------------------------
    def _build_controls(self) -> None:
        self.controls = LabControls()
        for name in LabControls.WIDGETS:  # the page's names for them, as tests and people use them
            setattr(self, name, getattr(self.controls, name))
        self.task.currentTextChanged.connect(self._show_task)
        self.train_button.clicked.connect(lambda: self._train((self.heads.value(),)))
        self.sweep_button.clicked.connect(self._sweep)
        self.pause_button.toggled.connect(self._pause)
        self.cancel_button.clicked.connect(self._cancel)
        self.save_button.clicked.connect(self._save)
        self.load_button.clicked.connect(self._load)
        self.export_button.clicked.connect(self._export)
        self.stage_button.clicked.connect(self._open_in_stage_view)

    def _build_views(self) -> None:
        v = self.views = LabViews()
        self.loss_plot, self.accuracy_plot, self.entropy_plot = v.loss_plot, v.accuracy_plot, v.entropy_plot
        self.maps, self.maps_heading = v.maps, v.maps_heading
        self.shown_run, self.tabs = v.shown_run, v.tabs
        self.shown_run.currentIndexChanged.connect(self._show_selected)
        outer = QHBoxLayout(self)
        # the controls keep the width they ask for (the dock scrolls when docked small)
        self.controls.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Preferred)
        outer.addWidget(self.controls)
        outer.addWidget(v, 1)

    def __getattr__(self, name: str):
        # only reached for a name not set: the views of the tabs LabViews builds a turn later
        if name in LATER_VIEWS and "views" in self.__dict__:
            return getattr(self.views, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _start_worker(self) -> None:
        self._thread = QThread(self)
        self.worker = LabWorker()
        self.worker.moveToThread(self._thread)
        self._train_requested.connect(self.worker.train)
        self._save_requested.connect(self.worker.save)
        self._load_requested.connect(self.worker.load)
        self.worker.started.connect(self._on_started)
        self.worker.progressed.connect(self._on_progress)
        self.worker.run_finished.connect(self._on_run_finished)
        # bound methods, not lambdas: a lambda has no thread of its own and would run on
        # the worker's thread, ahead of the results still queued for this one
        self.worker.finished.connect(self._on_finished)
        self.worker.cancelled.connect(self._on_cancelled)
        self.worker.failed.connect(self._on_failed)
        self.worker.saved.connect(self._on_saved)
        self._thread.start()
        self.worker.warmed_up.connect(self._on_warmed_up)
        self._warm_up_requested.connect(self.worker.warm_up)
        self._warm_up_requested.emit()
        app = QApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)

    def shutdown(self) -> None:
        """End the training process, the thread and the page's timers (call before the page
        goes). Nothing in the process is worth waiting for: a run not saved is not kept."""
        if getattr(self, "_shut", False):
            return
        self._shut = True
        self._refresh.stop()
        self.worker.kill()  # the thread waiting on it gets EOF at once, whatever it was doing
        self._thread.quit()
        self._thread.wait(SHUTDOWN_WAIT_MS)
        self.worker.stop()

    # actions ---------------------------------------------------------------
    def _show_task(self) -> None:
        self.controls.show_task()

    def _set_running(self, running: bool, job: str = "training") -> None:
        self._running = running
        if running:
            self._job = job
        self.controls.set_running(running)

    def _sweep(self) -> None:
        try:
            counts = tables.parse_head_counts(self.sweep_heads.text(), self.d_model.value())
        except ValueError as exc:
            self.error.setText(str(exc))
            return
        self._train(counts)

    def _train(self, counts: tuple[int, ...]) -> None:
        if self.d_model.value() % max(counts[0], 1) and len(counts) == 1:
            self.error.setText(f"{counts[0]} heads do not divide d_model {self.d_model.value()}")
            return
        self.error.clear()
        self._reset_results(steps=self.steps.value())
        self._set_running(True)
        self._train_requested.emit(LabRequest(
            task=self.task.currentText(), head_counts=counts, d_model=self.d_model.value(),
            steps=self.steps.value(), seed=self.seed.value(), layers=self.layers.value(),
            analyse=self.analyse.isChecked()))

    def _reset_results(self, steps: int | None) -> None:
        """Empty views for new runs of ``steps`` steps (None: as many as a loaded run has)."""
        self._summaries.clear()
        self._live.clear()
        self._order.clear()
        self.shown_run.clear()
        self.views.empty(steps, self._refresh)

    def _pause(self, paused: bool) -> None:
        self.worker.set_paused(paused)
        self.pause_button.setText("Resume" if paused else "Pause")

    def _cancel(self) -> None:
        self.worker.cancel()
        self.worker.set_paused(False)
        self._cancel_pending += 1
        pending = self._cancel_pending
        QTimer.singleShot(CANCEL_GRACE_MS, lambda: self._cancel_overdue(pending))

    def _cancel_overdue(self, pending: int) -> None:
        """The process did not answer the cancel in time (stuck in something that does not
        look at it): end it; the next request starts a fresh one."""
        if self._running and pending == self._cancel_pending and not getattr(self, "_shut", False):
            self._cancel_pending += 1
            self._killed_for_cancel = True
            self.worker.kill()

    def _selected_heads(self) -> int | None:
        return self.shown_run.currentData()

    def _save(self) -> None:
        heads = self._selected_heads()
        if heads is None:
            self.error.setText("train or load a run first")
            return
        folder = QFileDialog.getExistingDirectory(self, "Save the lab run into a folder")
        if folder:
            self.save_to(heads, f"{folder}/lab-{self.task.currentText()}-h{heads}")

    def save_to(self, heads: int, folder: str) -> None:
        self.error.clear()
        self._set_running(True, job="saving")
        self._save_requested.emit(heads, folder)

    def _load(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open a saved lab run (its folder)")
        if folder:
            self.load_folder(folder)

    def load_folder(self, folder: str) -> None:
        """Open a saved run (in the training process: it is checked there, and Cancel
        reaches it); a bad file is said inline and what is shown now stays."""
        self.error.clear()
        self._set_running(True, job="loading")
        self.progress.setText(f"loading {folder}…")
        self._load_requested.emit(folder)

    def _export(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export curves and tables into a folder")
        if folder:
            self.export_to(folder)

    def export_to(self, folder: str) -> list:
        from mha_explorer.qt.lab.export import export_all

        plots = {"loss": self.loss_plot, "accuracy": self.accuracy_plot, "entropy": self.entropy_plot,
                 "pruning": self.pruning_plot}
        try:
            written = export_all(folder, self._summaries, plots)
        except (OSError, ValueError) as exc:
            self.error.setText(f"could not export to {folder}: {exc}")
            return []
        self.status_message.emit(f"wrote {len(written)} files to {folder}")
        return written

    def _open_in_stage_view(self) -> None:
        heads = self._selected_heads()
        if heads is None:
            self.error.setText("train or load a run first")
            return
        folder = QFileDialog.getExistingDirectory(self, "Save the run first: choose a folder")
        if folder:
            self._stage_after_save = True
            self.save_to(heads, f"{folder}/lab-{self.task.currentText()}-h{heads}")

    # worker signals --------------------------------------------------------
    @Slot(int)
    def _on_started(self, heads: int) -> None:
        self._live[heads] = {"step": [], "loss": [], "accuracy": [], "entropy": []}
        if heads not in self._order:
            self._order.append(heads)
        self.progress.setText(f"training {heads} head{'s' if heads > 1 else ''}…")

    @Slot(int, object)
    def _on_progress(self, heads: int, event: dict) -> None:
        live = self._live.setdefault(heads, {"step": [], "loss": [], "accuracy": [], "entropy": []})
        layers = max(1, len(event["prefix"]) // heads)
        if not live["step"] or live["step"][-1] != event["step"]:
            for key in ("step", "loss", "accuracy", "entropy"):
                live[key].append(event[key])
            live.setdefault("prefix", []).append(max(event["prefix"][-heads:], default=0.0))
            live.setdefault("previous", []).append(max(event["previous"][:heads], default=0.0))
        color, name = color_for(self._order.index(heads) if heads in self._order else 0), f"h={heads}"
        steps = np.array(live["step"])
        # one plot per event-loop turn: each repaints alone, so no turn holds the loop long
        self._refresh.schedule("loss", lambda: self.loss_plot.set_curve(name, steps, live["loss"], color))
        self._refresh.schedule("accuracy", lambda: self.accuracy_plot.set_curve(
            name, steps, live["accuracy"], color))
        self._refresh.schedule("entropy", lambda: self._draw_entropy(steps, np.array(live["entropy"])))
        phase = self.views.phase
        self._refresh.schedule("phase loss", lambda: phase.show_loss(steps, live["loss"], name))
        self._refresh.schedule("phase scores", lambda: phase.show_scores(
            steps, live["loss"], live["accuracy"], live["prefix"], live["previous"], layers))
        if event["maps"] is not None:
            layers = event["maps"].shape[0]
            maps = event["maps"].reshape(-1, *event["maps"].shape[-2:])  # [layers * H, T, T]
            titles = [head_title(i, heads, layers) for i in range(len(maps))]
            heading = (f"{name} at step {event['step']}: each head's attention on evaluation sample 0 "
                       "(queries down, keys across)")

            def draw_maps() -> None:
                self.maps_heading.setText(heading)
                self.maps.show_maps(maps, titles, event["labels"])
            self._refresh.schedule("maps", draw_maps)
        self.progress.setText(f"{name}: step {event['step']} of {event['steps']}, "
                              f"held-out accuracy {event['accuracy']:.1%}")

    def _draw_entropy(self, steps: np.ndarray, bits: np.ndarray) -> None:
        n = bits.shape[1] if bits.ndim == 2 else 0
        if not self.entropy_plot.set_family(steps, bits.T, [f"head {i}" for i in range(n)],
                                            [color_for(i) for i in range(n)]):
            self._refresh.schedule("entropy", lambda: self._draw_entropy(steps, bits))

    @Slot(int, object)
    def _on_run_finished(self, heads: int, summary: dict) -> None:
        if self._job == "loading":  # the loaded run replaces what was shown only once it is whole
            self._reset_results(steps=None)
        self._summaries[heads] = summary
        if heads not in self._order:
            self._order.append(heads)
        color = color_for(self._order.index(heads))
        curve, pr, name = summary["curve"], summary.get("pruning"), f"h={heads}"
        later = self._refresh.schedule
        later(f"loss {name}", lambda: self.loss_plot.set_curve(name, curve[:, 0], curve[:, 1], color))
        later(f"accuracy {name}", lambda: self.accuracy_plot.set_curve(name, curve[:, 0], curve[:, 2], color))
        if pr:
            share = 100.0 * np.arange(len(pr["accuracy"])) / max(1, len(pr["order"]))  # % of heads removed
            later(f"pruning {name}", lambda: self.pruning_plot.set_curve(
                name, share, pr["accuracy"], color, symbol="o"))
        later(f"table {name}", lambda: tables.fill_comparison(self.comparison, self._summaries))
        later("tradeoff", lambda: self.tradeoff.setText(head_count_story(summary["d_model"], [
            (h, s["final_accuracy"], s["steps_to_95"]) for h, s in self._summaries.items()])))
        later(f"selected {name}", lambda: self._add_shown_run(heads))

    def _add_shown_run(self, heads: int) -> None:
        self.shown_run.addItem(f"{heads} head{'s' if heads > 1 else ''}", heads)
        self.shown_run.setCurrentIndex(self.shown_run.count() - 1)

    def _show_selected(self) -> None:
        """The selected run's entropy, ranking, pruning answer, survivors and circuit, each
        in its own event-loop turn (drawn together they held the loop over 100 ms)."""
        heads = self._selected_heads()
        summary = self._summaries.get(heads) if heads is not None else None
        if summary is None:
            return
        later = self._refresh.schedule
        later("entropy", lambda: self._draw_entropy(summary["entropy_steps"], summary["entropy"]))
        ab, pr = summary.get("ablation"), summary.get("pruning")
        later("ranking", lambda: tables.fill_ranking(self.ranking, ab))
        for key, part in zip(("phase loss", "phase scores", "phase words"),
                             self.views.phase.summary_parts(summary), strict=True):
            later(key, part)
        later("phase maps", lambda: self.views.phase.show_maps(summary))
        if pr:
            later("answer", lambda: self.answer.setText(pruning_answer(heads, pr)))
            if pr["survivor_maps"] is not None:
                titles = [head_title(i, heads, summary["layers"]) for i in pr["survivors"]]
                later("survivors", lambda: self.survivors.show_maps(pr["survivor_maps"], titles,
                                                                    summary["labels"]))
            else:
                later("survivors", lambda: self.survivors.show_maps(np.zeros((0, 1, 1)), []))  # all could go

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        if getattr(self, "_killed_for_cancel", False):
            self._killed_for_cancel = False
            self._done("cancelled")
            return
        self._stage_after_save = False
        self.error.setText(message)
        self.progress.setText(f"{self._job} stopped")
        self._set_running(False)

    @Slot()
    def _on_warmed_up(self) -> None:
        self._ready = True

    @Slot()
    def _on_finished(self) -> None:
        self._refresh.schedule_last("done", lambda: self._done("finished"))  # after the results are drawn

    @Slot()
    def _on_cancelled(self) -> None:
        self._refresh.schedule_last("done", lambda: self._done("cancelled"))

    def _done(self, how: str) -> None:
        self._set_running(False)
        self.progress.setText(f"{self._job} {how}")
        self.status_message.emit(f"lab: {self._job} {how}")

    @Slot(str, object)
    def _on_saved(self, folder: str, changes: dict) -> None:
        self._done("finished")
        self.status_message.emit(f"lab run saved to {folder}")
        if self._stage_after_save:
            self._stage_after_save = False
            self.stage_view_requested.emit(changes)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 - Qt's name
        # its wrapped labels would make a scroll area around the page ask for the page's
        # preferred height (over 1,000 px) instead of fitting it to the dock
        return False

    @property
    def running(self) -> bool:
        return self._running

    @property
    def ready(self) -> bool:
        """True once the training process has loaded torch."""
        return self._ready
