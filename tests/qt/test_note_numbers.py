"""The √d_k note beside the scores says the numbers of the division the engine made: the width
whose root divided QKᵀ (latent attention's d_n + d_r, a trained model's own head width, never
D / H), the spread of the scores before and after it, and the softmax entropy of both. Each is
read from the stage header as a person reads it and compared with what the trace's own Q and K
give, for every attention family and every trained model."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.rules import trained_fields
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.stages.catalog import StageId

WAIT_MS = 120_000
NOTE = re.compile(r"Why ÷√([\d,]+): QKᵀ spreads σ = ([\d.]+), ÷√([\d,]+) σ = ([\d.]+)\. Softmax entropy "
                  r"([\d.]+) bits scaled, ([\d.]+) bits unscaled \(even: ([\d.]+) bits\)")
FAMILIES = {
    "MHA": MHAConfig(d_model=64, n_heads=4, batch=2, seq=7),
    "GQA with RoPE": MHAConfig(d_model=64, n_heads=8, n_kv_heads=2, seq=7, positions="rope", causal=True),
    "MQA, heads wider than D / H": MHAConfig(d_model=64, n_heads=4, n_kv_heads=1, head_dim=24, seq=7),
    # D / H = 16, while the scores are divided by √(d_n + d_r) = √22
    "MLA": MHAConfig(d_model=64, n_heads=4, seq=7, mla=True, kv_lora_rank=24, qk_rope_head_dim=6,
                     positions="rope", causal=True),
}


def _model_config(key: str) -> MHAConfig:
    model = MODELS[key]
    pieces = runtime.as_pieces(model, ["the", "cat", "sat", "on", "the", "mat"])
    return MHAConfig(**trained_fields(model, 2), weights=key, layer=2, tokens=pieces, seq=len(pieces),
                     batch=1, device="cpu")


def _q_k(trace) -> tuple[np.ndarray, np.ndarray]:
    """The shown element's per-head Q [H, T, w] and K [H, S, w] as the scores read them: the last
    stage before the scores that holds both (after any norm and RoPE), K repeated per group."""
    order = build_plan(trace.config).stage_ids
    before = order[:order.index(StageId.scores) + 1]
    held = [trace.tensors[s] for s in before if {"Q", "K"} <= set(trace.tensors.get(s, {}))
            and trace.tensors[s]["Q"].ndim == 4]
    q, k = held[-1]["Q"][0].astype(np.float64), held[-1]["K"][0].astype(np.float64)
    return q, np.repeat(k, q.shape[0] // k.shape[0], axis=0)


def _entropy_bits(logits: torch.Tensor) -> float:
    p = torch.softmax(logits, dim=-1)
    rows = -torch.special.xlogy(p, p).sum(-1) / math.log(2)
    return float(rows[torch.isfinite(logits).any(-1)].mean())


def _said_numbers(window, qtbot) -> tuple[float, ...]:
    view = window.stage_view
    window.controller.set_stage(StageId.scores)
    qtbot.waitUntil(lambda: NOTE.search(view.scaling.toolTip() or view.scaling.text()) is not None,
                    timeout=WAIT_MS)
    found = NOTE.search(view.scaling.toolTip() or view.scaling.text())
    assert found.group(1) == found.group(3)
    return tuple(float(g.replace(",", "")) for g in found.groups())


def _check(window, qtbot) -> None:
    width, raw_std, _, scaled_std, scaled_bits, raw_bits, even_bits = _said_numbers(window, qtbot)
    trace = window.controller.trace
    scores = trace.tensors[StageId.scores]["scores"][0].astype(np.float64)  # [H, T, S], hidden -inf
    q, k = _q_k(trace)
    raw = q @ k.transpose(0, 2, 1)  # [H, T, S]
    seen = np.isfinite(scores)
    # the width the note names is the one the engine divided by
    np.testing.assert_allclose(scores[seen] * math.sqrt(width), raw[seen], rtol=1e-3, atol=1e-3)
    assert raw_std == pytest.approx(float(raw[seen].std()), abs=0.006)
    assert scaled_std == pytest.approx(float(scores[seen].std()), abs=0.006)
    raw_hidden = torch.from_numpy(np.where(seen, raw, -np.inf))
    assert scaled_bits == pytest.approx(_entropy_bits(torch.from_numpy(scores)), abs=0.006)
    assert raw_bits == pytest.approx(_entropy_bits(raw_hidden), abs=0.006)
    rows = seen.any(-1)
    assert even_bits == pytest.approx(float(np.log2(seen.sum(-1)[rows]).mean()), abs=0.006)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_note_says_the_familys_own_division(qtbot, make_window, name):
    _check(make_window(FAMILIES[name]), qtbot)


@pytest.mark.parametrize("key", sorted(MODELS))
def test_the_note_says_each_trained_models_own_division(qtbot, make_window, key):
    ok, why = runtime.is_available(MODELS[key])
    if not ok:
        pytest.skip(why)
    _check(make_window(_model_config(key)), qtbot)
