"""A trained model's choice reads the sentence as its tokens on the jobs thread, never on the GUI
thread: the choice shows its progress at once, under itself, with a Cancel that keeps the
weights in use (Gemma 3's first choice converts its file first: seconds to tens of seconds), and
a sentence typed while a model is chosen is read there too without the box being rewritten."""

from __future__ import annotations

import threading

import pytest

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import MODELS

WAIT_MS = 240_000


def _needs(key: str):
    ok, why = runtime.is_available(MODELS[key])
    return pytest.mark.skipif(not ok, reason=why)


@pytest.fixture
def reading_threads(monkeypatch):
    """The thread each reading of a text as a model's tokens ran on."""
    threads: list[threading.Thread] = []
    real = runtime.as_pieces

    def recording(*args, **kwargs):
        threads.append(threading.current_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(runtime, "as_pieces", recording)
    return threads


def _choose(window, key: str) -> None:
    panel = window.weights_panel
    panel.combo.setCurrentIndex(panel.combo.findData(key))


@_needs("minilm-l6")
def test_a_choice_and_a_typed_sentence_are_read_off_the_gui_thread(qtbot, make_window, reading_threads):
    window = make_window(MHAConfig(d_model=64, n_heads=4, batch=1, seq=3, tokens=("the", "cat", "sat"),
                                   device="cpu"))
    c = window.controller
    _choose(window, "minilm-l6")
    qtbot.waitUntil(lambda: c.config.weights == "minilm-l6", timeout=WAIT_MS)
    assert c.config.tokens == ("[CLS]", "the", "cat", "sat", "[SEP]")
    field = window.controls.sentence_edit
    field.setFocus()
    field.selectAll()
    qtbot.keyClicks(field, "a dog ran")  # each key read as the model's tokens, the newest wins
    qtbot.waitUntil(lambda: c.config.tokens == ("[CLS]", "a", "dog", "ran", "[SEP]"), timeout=WAIT_MS)
    assert field.text() == "a dog ran"  # the box keeps what was typed, not the model's pieces
    assert reading_threads and threading.main_thread() not in reading_threads


@_needs("gemma3-270m")
def test_gemma_first_choice_shows_its_progress_and_cancel_keeps_the_weights(qtbot, make_window, monkeypatch,
                                                                           tmp_path):
    monkeypatch.setenv("MHA_EXPLORER_CACHE_DIR", str(tmp_path / "cache"))  # nothing converted yet
    window = make_window(MHAConfig(d_model=64, n_heads=4, batch=1, seq=6, device="cpu"))
    c, panel = window.controller, window.weights_panel
    before = c.config
    _choose(window, "gemma3-270m")  # returns at once: the conversion runs on the jobs thread
    assert panel.progress.isVisible() and panel.cancel_button.isVisible()
    assert panel.note.text().startswith("Opening Gemma 3 270M")
    assert panel.combo.currentData() == "gemma3-270m" and c.config == before
    # the conversion names its steps as it goes (checking the packages' files first)
    qtbot.waitUntil(lambda: "Gemma 3 270M" in panel.note.text() and "MB" in panel.note.text(),
                    timeout=WAIT_MS)
    panel.cancel_button.click()
    assert c.reading is None and c.config == before and panel.combo.currentData() == "random"
    assert not panel.progress.isVisible() and not panel.cancel_button.isVisible()
    # the jobs thread stops between two pieces of its reading, and leaves no copy behind
    qtbot.waitUntil(lambda: c.jobs._runner.in_flight is None, timeout=WAIT_MS)
    assert not list((tmp_path / "cache").rglob("manifest.json"))
