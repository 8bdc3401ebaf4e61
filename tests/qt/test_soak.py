"""A long session of random interactions through the real window.

Thousands of edits, stage keys, play/pause, presets, resizes, exports and
presentation toggles must leave no exception, no hang, no leaked thread or
window, and resident memory within 50 MB of where it settled.

CI runs a few hundred interactions; `MHA_SOAK_INTERACTIONS=5000` runs the full soak.
"""

from __future__ import annotations

import ctypes
import gc
import os
import random
import sys

import psutil
import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QApplication

from mha_explorer.core.config import MHAConfig
from mha_explorer.qt.shell.app import build_window
from mha_explorer.qt.shell.settings import Preferences

INTERACTIONS = int(os.environ.get("MHA_SOAK_INTERACTIONS", "400"))
WARM_UP = 150  # at least this many interactions before the memory baseline
MAX_GROWTH = 50 * 2**20
SMALL_PRESETS = ("transformer-base", "gpt2", "bert-base")  # keep each compute quick
KEYS = (Qt.Key.Key_Left, Qt.Key.Key_Right, Qt.Key.Key_Home, Qt.Key.Key_End,
        Qt.Key.Key_Space, Qt.Key.Key_PageUp, Qt.Key.Key_PageDown)


def _settled_rss(process: psutil.Process) -> int:
    """Resident memory once freed blocks are handed back: glibc keeps freed
    memory in its arenas, which is reuse, not a leak."""
    gc.collect()
    if sys.platform.startswith("linux"):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    return process.memory_info().rss


def _visit_extremes(window, qtbot) -> None:
    """Fill every cache once: the most heads the soak can reach, at every stage."""
    ctrl = window.controller
    for cfg in (dict(d_model=96, n_heads=96, n_kv_heads=None, seq=12, batch=3),
                dict(d_model=96, n_heads=12, n_kv_heads=3, seq=12, kv_seq=10, causal=True)):
        with qtbot.waitSignal(ctrl.trace_ready, timeout=60_000):
            ctrl.update(**cfg)
        for stage in range(9):
            ctrl.set_stage(stage)
            QApplication.processEvents()
    with qtbot.waitSignal(ctrl.trace_ready, timeout=60_000):
        ctrl.update(d_model=32, n_heads=4, n_kv_heads=None, seq=5, kv_seq=None, batch=2,
                    causal=False)


def _interactions(window, qtbot, rng: random.Random, tmp_path):
    c = window.controls

    def spin(widget, low, high):
        return lambda: widget.setValue(rng.randint(low, high))

    def key():
        qtbot.keyClick(window, rng.choice(KEYS))

    def kv_mode():
        rng.choice(list(c.kv_buttons.values())).click()

    def toggle(check):
        return lambda: check.click()

    def preset():
        key_ = rng.choice(SMALL_PRESETS)
        c.preset_combo.setCurrentIndex(max(0, c.preset_combo.findData(key_)))

    def sentence():
        words = rng.choice(["the cat sat on the mat", "a b a b", "", "one"])
        c.sentence_edit.setText(words)

    def resize():
        window.resize(rng.randint(900, 1920), rng.randint(600, 1080))

    def stage_click():
        rng.choice(list(window.stepper.stage_buttons.values())).click()

    def suggestion():
        buttons = c.suggestion_buttons()
        if buttons:
            rng.choice(buttons).click()

    def batch_element():
        window.controller.set_batch_index(rng.randint(0, 3))

    def speed():
        window.controller.set_speed(rng.choice((0.5, 1.0, 2.0, 3.0)))

    actions = [
        spin(c.d_model_spin, 1, 96), spin(c.heads_spin, 1, 12), spin(c.batch_spin, 1, 3),
        spin(c.seq_spin, 1, 12), spin(c.seed_spin, 0, 5), kv_mode, spin(c.kv_spin, 1, 6),
        toggle(c.causal_check), toggle(c.bias_check), toggle(c.cross_check),
        spin(c.kv_seq_spin, 1, 10), preset, sentence, key, key, key, resize, stage_click,
        suggestion, batch_element, speed,
    ]
    for name in ("presentation", "theme", "reduced_motion"):
        if name in window.actions:
            actions.append(window.actions[name].trigger)
    export = getattr(window, "export_current", None)
    if export is not None:
        actions.append(lambda: export(tmp_path / "export"))
    return actions


@pytest.mark.slow
def test_random_session_leaks_nothing(qtbot, tmp_path):
    prefs = Preferences(str(tmp_path / "settings.ini"))
    window = build_window(MHAConfig(d_model=32, n_heads=4, batch=2, seq=5), prefs)
    qtbot.addWidget(window)
    window.show()
    ctrl = window.controller
    with qtbot.waitSignal(ctrl.trace_ready, timeout=60_000):
        ctrl.start()

    rng = random.Random(20261122)
    actions = _interactions(window, qtbot, rng, tmp_path)
    process = psutil.Process()
    _visit_extremes(window, qtbot)
    warm_up = max(WARM_UP, INTERACTIONS // 10)
    baseline = None
    for i in range(INTERACTIONS):
        rng.choice(actions)()
        QApplication.processEvents()
        # what the running event loop does between events: widgets given
        # deleteLater() are really deleted
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        if i == warm_up:
            qtbot.waitUntil(lambda: not ctrl.computing, timeout=60_000)
            baseline = _settled_rss(process)

    # no hang: the last edit still produces a trace
    ctrl.pause()
    with qtbot.waitSignal(ctrl.trace_ready, timeout=60_000):
        ctrl.update(seed=(ctrl.config.seed + 1) % 100)
    QApplication.processEvents()
    if baseline is not None:
        growth = _settled_rss(process) - baseline
        print(f"soak: {INTERACTIONS} interactions, RSS growth after warm-up "
              f"{growth / 2**20:.1f} MiB")  # visible with -s, for the record
        assert growth <= MAX_GROWTH, f"resident memory grew {growth / 2**20:.1f} MiB"

    window.close()
    assert not ctrl.is_running(), "the compute thread outlived the window"
    leftovers = [w for w in QApplication.topLevelWidgets() if w.isVisible()]
    assert not leftovers, f"windows left open: {leftovers}"
