"""The controller's memory budget: the one given, the environment's, or a share of the
free memory. A bad MHA_EXPLORER_MEMORY_BUDGET never fails a run or raises in the window:
it is said in the status line (beside every result) and the default is used."""

from __future__ import annotations

from mha_explorer.core.plan.memory import BudgetSettingError, budget_from_env, default_budget


class BudgetMixin:
    """For Controller: reads ``_budget`` and ``status_changed``; keeps ``settings_warnings``."""

    _budget: int | None
    settings_warnings: list[str]

    def budget(self) -> int:
        if self._budget is not None:
            return self._budget
        return default_budget(on_bad_setting=self._warn_bad_budget)

    def _warn_bad_budget(self, err: Exception) -> None:
        message = f"{err}; using the default budget"
        if message not in self.settings_warnings:
            self.settings_warnings.append(message)
            self.status_changed.emit(message)  # type: ignore[attr-defined]

    def _request_budget(self) -> int | None:
        """For a run: None lets the engine take the device's own budget; after a bad
        environment value the default, so the run does not fail on it."""
        if self._budget is not None:
            return self._budget
        try:
            budget_from_env()
        except BudgetSettingError:
            return self.budget()
        return None
