"""Work run in a process of its own comes back as if it had run here: its result, its progress
as it reports it, its ConfigError with the field and the fixes, and Cancel heard between its
pieces. The work below is this module's own, imported by the child by name."""

from __future__ import annotations

import os
import time

import pytest

from mha_explorer.core.errors import Cancelled, ConfigError
from mha_explorer.core.system.elsewhere import run_elsewhere

HERE = f"{__name__}"


def counting(n: int, *, progress, cancel) -> tuple[int, int]:
    """Reports each step; returns (n, the child's process id)."""
    for i in range(n):
        progress((i + 1) / n, f"step {i + 1} of {n}")
    return n, os.getpid()


def refusing(*, progress, cancel) -> None:
    raise ConfigError("tokens", "the text is empty: type a few words", [{"tokens": None}])


def waiting(*, progress, cancel) -> None:
    progress(0.0, "waiting")
    while not cancel():  # a piece of work between two looks at cancel
        time.sleep(0.01)
    from mha_explorer.core.errors import check_cancel

    check_cancel(cancel)


def test_the_result_and_the_progress_come_back_from_another_process():
    heard = []
    n, pid = run_elsewhere(f"{HERE}:counting", (3,), progress=lambda f, text: heard.append((f, text)))
    assert n == 3 and pid != os.getpid()
    assert heard == [(1 / 3, "step 1 of 3"), (2 / 3, "step 2 of 3"), (1.0, "step 3 of 3")]


def test_a_config_error_comes_back_with_its_field_and_fixes():
    with pytest.raises(ConfigError) as caught:
        run_elsewhere(f"{HERE}:refusing")
    assert caught.value.field == "tokens" and caught.value.suggestions == [{"tokens": None}]
    assert caught.value.message == "the text is empty: type a few words"


def test_cancel_reaches_the_child_between_its_pieces():
    heard = []
    with pytest.raises(Cancelled):
        run_elsewhere(f"{HERE}:waiting", progress=lambda f, text: heard.append(text),
                      cancel=lambda: bool(heard))  # cancelled once it has said it waits
    assert heard == ["waiting"]
