"""View → Compare models: every trained model's arithmetic in a table as soon as the window
opens, then one text read by each on the jobs thread (progress, Cancel), its induction heads
and sinks in the table, and one chosen depth's heads of each model side by side, grouped by
the K/V head they read."""

from __future__ import annotations

import pytest

from mha_explorer.core.display.compare import COLUMNS, model_shape
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.runtime import is_available

WAIT_MS = 300_000  # three models loaded (and converted, the first time) on a slow machine
INSTALLED = [m for m in MODELS.values() if is_available(m)[0]]


def _cell(window, row: int, column: str) -> str:
    return window.table.item(row, COLUMNS.index(column)).text()


def _hover(window, row: int, column: str) -> str:
    return window.table.item(row, COLUMNS.index(column)).toolTip()


def test_the_arithmetic_is_there_before_anything_is_read(make_window):
    window = make_window().show_compare()
    assert window.table.rowCount() == len(MODELS)
    for row, model in enumerate(MODELS.values()):
        shape = model_shape(model)
        assert _cell(window, row, "K/V heads") == str(model.kv_heads)
        assert f"{shape.attention_params_per_layer:,}" in _hover(window, row, "params / layer")
        assert f"{shape.kv_bytes_per_token:,} B" in _hover(window, row, "KV cache / token")
        assert _cell(window, row, "induction head") == "—"
    assert not window.cancel_button.isEnabled()


@pytest.mark.skipif(not INSTALLED, reason="no trained model is installed")
def test_a_text_read_by_every_model_fills_the_table_and_the_small_multiples(make_window, qtbot):
    window = make_window().show_compare()
    window.text_edit.setText("red green blue, red green blue")
    window.run_button.click()
    assert window.cancel_button.isEnabled() and not window.run_button.isEnabled()
    qtbot.waitUntil(lambda: window.result is not None, timeout=WAIT_MS)
    assert window.run_button.isEnabled() and not window.cancel_button.isEnabled()
    for row, model in enumerate(MODELS.values()):
        induction = _cell(window, row, "induction head")
        if model in INSTALLED:
            assert induction.startswith("layer ")  # the text repeats itself
            strip = window.strips[model.key]
            assert len(strip.images) == model.heads  # one layer's heads
            rects = [strip.cell_rect(h) for h in range(model.heads)]
            assert all(a.right() < b.left() for a, b in zip(rects, rects[1:], strict=False))  # none overlap
        else:
            assert "not installed" in induction
    window.depth.setValue(100)  # the last layer of each
    for model in INSTALLED:
        assert f"layer {model.layers} of {model.layers}" in window.strips[model.key].title


@pytest.mark.skipif(not INSTALLED, reason="no trained model is installed")
def test_cancel_stops_and_shows_nothing_half_done(make_window, qtbot):
    window = make_window().show_compare()
    heard = []
    window._jobs.progressed.connect(lambda p: heard.append(p))
    window.run_button.click()
    qtbot.waitUntil(lambda: bool(heard), timeout=WAIT_MS)
    window.cancel_button.click()
    assert window.run_button.isEnabled() and window.summary.text() == "Cancelled."
    with qtbot.waitSignal(window._jobs.cancelled, timeout=WAIT_MS, raising=False):
        pass
    assert window.result is None
