"""Views' updates spread over event-loop turns: an update scheduled last runs after the
ordinary ones, and two scheduled last (the √d_k note's job and the window's own torch
after an early first trace) both run instead of waiting for each other forever."""

from __future__ import annotations

from mha_explorer.qt.staggered import StaggeredRefresh


def test_updates_scheduled_last_run_after_the_others_and_never_wait_for_each_other(qtbot):
    later = StaggeredRefresh()
    ran: list[str] = []
    later.schedule_last("note", lambda: ran.append("note"))
    later.schedule("maps", lambda: ran.append("maps"))
    later.schedule_last("torch", lambda: ran.append("torch"))
    later.schedule("table", lambda: ran.append("table"))
    qtbot.waitUntil(lambda: len(ran) == 4, timeout=5_000)
    assert ran[:2] == ["maps", "table"] and set(ran[2:]) == {"note", "torch"}
    assert later.idle

