"""MHA_EXPLORER_MEMORY_BUDGET: sizes are read, anything else is one clear ConfigError
naming the variable and the accepted forms, and callers can fall back to the default."""

from __future__ import annotations

import pytest

from mha_explorer.core.config import ConfigError
from mha_explorer.core.plan.memory import BUDGET_ENV, BudgetSettingError, budget_from_env, default_budget


@pytest.mark.parametrize("value,expected", [
    ("4G", 4 * 1024**3), ("512M", 512 * 1024**2), ("512MiB", 512 * 1024**2), ("1000000", 1_000_000),
    (" 2k ", 2048), ("1.5G", 3 * 1024**3 // 2),
])
def test_sizes_are_read(monkeypatch, value, expected):
    monkeypatch.setenv(BUDGET_ENV, value)
    assert default_budget() == expected


@pytest.mark.parametrize("value", ["garbage", "-1", "nan", "   ", "9" * 400, "0", "inf", "1e9", "4 G B"])
def test_bad_values_are_one_line_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv(BUDGET_ENV, value)
    with pytest.raises(BudgetSettingError) as info:
        default_budget()
    err = info.value
    assert isinstance(err, ConfigError)
    assert "\n" not in err.message and len(err.message) < 200
    assert err.message.startswith(f"{BUDGET_ENV}=") and "4G" in err.message and "512M" in err.message


def test_a_caller_can_warn_and_use_the_default(monkeypatch):
    monkeypatch.delenv(BUDGET_ENV, raising=False)
    default = default_budget(available=8 << 30)
    monkeypatch.setenv(BUDGET_ENV, "garbage")
    warnings: list[str] = []
    assert default_budget(available=8 << 30, on_bad_setting=lambda e: warnings.append(e.message)) == default
    assert len(warnings) == 1 and BUDGET_ENV in warnings[0]


def test_unset_or_empty_means_no_override(monkeypatch):
    monkeypatch.delenv(BUDGET_ENV, raising=False)
    assert budget_from_env() is None
    monkeypatch.setenv(BUDGET_ENV, "")
    assert budget_from_env() is None
