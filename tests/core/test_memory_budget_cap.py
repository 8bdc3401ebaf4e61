"""A budget override larger than the machine's free memory is held to that memory, so the
guard refuses before allocating instead of a failed allocation halfway through."""

from __future__ import annotations

import pytest

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.memory import (
    BUDGET_ENV,
    MemoryBudgetError,
    budget_cap_note,
    default_budget,
    estimate,
)


def test_an_override_above_the_free_memory_is_capped_to_it(monkeypatch):
    monkeypatch.setenv(BUDGET_ENV, "1000T")
    assert default_budget(available=8 << 30) == 8 << 30
    monkeypatch.setenv(BUDGET_ENV, "2G")  # below it, the override stands
    assert default_budget(available=8 << 30) == 2 << 30


def test_a_layer_larger_than_the_machine_is_refused_before_computing(monkeypatch):
    monkeypatch.setenv(BUDGET_ENV, "1000T")
    cfg = MHAConfig(d_model=65536, n_heads=8, batch=1, seq=500_000, device="cpu")
    est = estimate(cfg)
    free = est.windowed_bytes // 4  # a machine a quarter the size the layer needs
    with pytest.raises(MemoryBudgetError):
        est.choose(default_budget(available=free))
    note = budget_cap_note(available=free)  # the refusal can say why the setting did not hold
    assert note is not None and BUDGET_ENV in note and "1000.0 TiB" in note
    monkeypatch.setenv(BUDGET_ENV, "1K")
    assert budget_cap_note(available=free) is None
