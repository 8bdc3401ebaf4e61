"""A scripted lesson through the whole window, step by step, with a stall watchdog on its event
loop: read by tests/qt/test_lesson_stalls.py (CI-sized, a generous limit) and by
benchmarks/bench_lesson.py (the whole lesson, the figures per step).

Each step drives the window as a person does (a choice, a key, a button) and returns once what
it started has been drawn; ``run_lesson`` notes the longest stop of the event loop in each step
and the stalls the watchdog reported. Waiting is done in the event loop itself (a QEventLoop
that looks every few milliseconds), so the loop's stops are the window's own.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from PySide6.QtCore import QEventLoop, QTimer
from PySide6.QtWidgets import QProgressBar

from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.qt.stall_watchdog import Stall, StallWatchdog

WAIT_S = 600.0  # the slowest step: a first conversion on a loaded machine
PRESETS = ("gpt2", "llama3-8b", "mistral-7b", "deepseek-v3")


@dataclass
class StepResult:
    name: str
    longest_ms: float  # the longest stop of the event loop in the step
    seconds: float  # the step's whole time
    stalls: list[Stall] = field(default_factory=list)
    progress_after_s: float | None = None  # a choice's first visible progress (the model steps)


def wait_until(predicate: Callable[[], bool], timeout_s: float = WAIT_S, *, what: str = "") -> float:
    """Run the event loop until ``predicate()``; the seconds it took. TimeoutError past timeout_s."""
    start = time.perf_counter()
    loop = QEventLoop()
    timer = QTimer(interval=5)
    timer.timeout.connect(lambda: (predicate() or time.perf_counter() - start > timeout_s) and loop.quit())
    timer.start()
    if not predicate():
        loop.exec()
    timer.stop()
    if not predicate():
        raise TimeoutError(f"waited {timeout_s:.0f} s for {what or predicate}")
    return time.perf_counter() - start


def settle(window, seconds: float = 0.3) -> None:
    """The views' staggered reactions done, then ``seconds`` more of the loop running idle."""
    wait_until(lambda: window.controller.later.idle, what="the views to catch up")
    end = time.perf_counter() + seconds
    wait_until(lambda: time.perf_counter() >= end)


def traced(window) -> bool:
    c = window.controller
    return c.current_trace is not None and not c.computing


def progress_shown(window) -> bool:
    """Some progress bar of the window is on screen (painted where a person can see it)."""
    bars = [b for b in window.findChildren(QProgressBar) if b.isVisible() and not b.visibleRegion().isEmpty()]
    return bool(bars)


def available(key: str) -> bool:
    return runtime.is_available(MODELS[key])[0]


# the steps --------------------------------------------------------------------------------------

def start(window) -> None:
    wait_until(lambda: traced(window), what="the first trace")
    settle(window)


def choose_model(key: str) -> Callable:
    def step(window) -> float | None:
        begun = time.perf_counter()
        seen: list[float] = []

        def look() -> bool:
            if not seen and progress_shown(window):
                seen.append(time.perf_counter() - begun)
            c = window.controller
            return c.config.weights == key and traced(window)

        window.weights_panel.combo.setCurrentIndex(window.weights_panel.combo.findData(key))
        look()
        wait_until(look, what=f"{key} to be shown")
        settle(window)
        return seen[0] if seen else None
    return step


def presets(window) -> None:
    combo = window.controls.preset_combo
    for key in PRESETS:
        combo.setCurrentIndex(combo.findData(key))
        wait_until(lambda: traced(window), what=f"the {key} trace")
        settle(window, 0.1)


def every_stage(window) -> None:
    c = window.controller
    c.first_stage()
    settle(window, 0.1)
    while c.stage_index < len(c.stage_ids) - 1:
        c.next_stage()
        settle(window, 0.1)


def presentation(window) -> None:
    window.set_presentation(True)
    settle(window)
    for _ in range(3):
        window.controller.next_stage()
        settle(window, 0.1)
    window.set_presentation(False)
    settle(window)


def lab_training(window) -> None:
    window.lab.show()
    page = window.lab.page
    wait_until(lambda: page.ready, what="the lab's process")
    page.d_model.setValue(16)
    page.heads.setValue(2)
    page.steps.setValue(40)
    page.analyse.setChecked(False)
    page.train_button.click()
    wait_until(lambda: page.running, what="the training to start")
    wait_until(lambda: not page.running, what="the training to end")
    settle(window)
    window.lab.dock_back()  # the person goes back to the window
    settle(window)


def induction_heads(window) -> None:
    window.docks["layers"].show()
    window.docks["layers"].raise_()
    panel = window.shell.built("layers")
    view = panel.induction
    panel.tables.setCurrentIndex(2)
    view.run_button.click()
    wait_until(lambda: view.grid.data is not None, what="the induction heads")
    settle(window)


def generation(window) -> None:
    window.docks["generation"].show()
    window.docks["generation"].raise_()
    tabs = window.shell.built("generation")
    tabs.tabs.setCurrentIndex(2)
    panel = tabs.decoder_panel
    panel.steps_spin.setValue(3)
    panel.generate_button.click()
    wait_until(lambda: panel.view.step_count == 3, what="the model writing")
    settle(window)


def export(folder: str) -> Callable:
    def step(window) -> None:
        window.export_current(folder)
        settle(window)
    return step


def theme_switch(window) -> None:
    window.toggle_theme()
    settle(window)
    window.toggle_theme()
    settle(window)


def quit_window(window) -> None:
    window.close()


def lesson_steps(folder: str, *, models: tuple[str, ...] = ("gemma3-270m", "minilm-l6"),
                 lab: bool = True, decoder_steps: bool = True) -> list[tuple[str, Callable]]:
    """(name, step) in the lesson's order; a model whose package is missing is left out, and
    the Lab's training and a decoder's induction heads and generation when not asked for."""
    shown = [key for key in models if available(key)]
    decoder = next((key for key in shown if MODELS[key].causal), None)
    steps: list[tuple[str, Callable]] = [("start", start)]
    steps += [(f"first choice of {MODELS[key].name}", choose_model(key)) for key in shown]
    steps += [("random weights", choose_model("random")), ("presets", presets),
              ("every stage", every_stage), ("presentation", presentation)]
    if lab:
        steps.append(("Lab training", lab_training))
    if decoder is not None and decoder_steps:
        steps += [(f"{MODELS[decoder].name} again", choose_model(decoder)),
                  ("induction heads", induction_heads), ("generation", generation)]
    steps += [("export", export(os.path.join(folder, "export"))), ("theme switch", theme_switch),
              ("quit", quit_window)]
    return steps


def run_lesson(window, steps, dog: StallWatchdog, on_step: Callable[[StepResult], None] | None = None
               ) -> list[StepResult]:
    """Each step with the watchdog's figures for it; ``on_step`` hears of each as it ends."""
    results = []
    for name, step in steps:
        dog.label = name
        dog.reset()
        begun = time.perf_counter()
        if name == "quit":  # the close itself holds the loop: time it as a stop
            step(window)
            ms = 1000 * (time.perf_counter() - begun)
            stalls = list(dog.stalls)
            if ms > dog.limit_ms:
                stalls.append(Stall(ms, ("MainWindow.close: the window's own closing",), label=name))
            result = StepResult(name, max(ms, dog.longest_ms), ms / 1000, stalls)
        else:
            said = step(window)
            result = StepResult(name, dog.longest_ms, time.perf_counter() - begun, list(dog.stalls),
                                said if isinstance(said, float) else None)
        results.append(result)
        if on_step is not None:
            on_step(result)
    return results
