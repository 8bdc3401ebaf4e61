"""The Parameters panel prints the core's formulas: each written-out product equals the value
the plan holds, for every kind of attention and for a windowed cache (the panel is read as a
person reads it, from its labels)."""

from __future__ import annotations

import math
import re

import pytest

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.presets import get_preset
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.units import format_bytes
from mha_explorer.qt.panels.parameters import ParamsPanel

CONFIGS = {
    "MHA": MHAConfig(d_model=64, n_heads=4, seq=6),
    "GQA": MHAConfig(d_model=64, n_heads=8, n_kv_heads=2, seq=6, bias=False),
    "MQA": MHAConfig(d_model=64, n_heads=8, n_kv_heads=1, seq=6),
    "MLA": MHAConfig(d_model=64, n_heads=4, seq=6, mla=True, kv_lora_rank=24, qk_rope_head_dim=6),
    "DeepSeek-V3": get_preset("deepseek-v3").apply(MHAConfig(seq=6)),
    "window 16 of 64": MHAConfig(d_model=64, n_heads=4, n_kv_heads=2, seq=64, causal=True, window=16),
    "window + globals": MHAConfig(d_model=64, n_heads=4, seq=64, causal=True, window=16, global_tokens=2),
}


def _product(text: str) -> int:
    """The value of a written-out product such as '2 × 2 × 64 × 4' or '(512 + 64) × 2'."""
    expression = text.replace("×", "*").replace(",", "").replace("B", "").strip()
    assert re.fullmatch(r"[\d\s*+()]+", expression), f"not a product of numbers: {text!r}"
    return int(eval(expression))  # digits, + and * only, checked above


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_cache_and_parameter_lines_equal_the_plans_values(qtbot, make_controller, name):
    cfg = CONFIGS[name]
    panel = ParamsPanel(make_controller(cfg, wait=False))
    qtbot.addWidget(panel)
    plan = build_plan(cfg)
    memory = plan.memory

    symbols, numbers = panel.kv_token_note.text().replace("\u00a0", " ").split(" = ")
    assert _product(numbers) == memory.kv_cache_per_token
    assert panel.kv_token_label.text() == format_bytes(memory.kv_cache_per_token)
    sequence = panel.kv_sequence_note.text().replace("\u00a0", " ")
    assert int(sequence.rsplit(" ", 1)[-1].replace(",", "")) == memory.kv_cache_tokens
    assert memory.kv_cache_per_sequence == memory.kv_cache_per_token * memory.kv_cache_tokens
    assert panel.kv_sequence_label.text() == format_bytes(memory.kv_cache_per_sequence)
    if cfg.window is not None:  # a rolling cache says so, with the window in it
        assert "W" in sequence and "min(" in sequence and memory.kv_cache_tokens < cfg.S
    else:
        assert sequence == f"× S = × {cfg.S:,}"
    assert panel.kv_batch_label.text() == format_bytes(memory.kv_cache_batch)

    shown = [labels for labels in panel.term_labels if labels[0].isVisibleTo(panel)]
    assert len(shown) == len(plan.params.terms)
    for (name_label, formula_label, count_label), term in zip(shown, plan.params.terms, strict=True):
        assert name_label.text() == term.name
        written = formula_label.text().replace("\u00a0", " ").split(" = ")[-1]
        assert _product(written) == term.count == int(count_label.text().replace(",", ""))
    assert int(panel.total_label.text().replace(",", "")) == plan.params.total == math.fsum(
        t.count for t in plan.params.terms)
