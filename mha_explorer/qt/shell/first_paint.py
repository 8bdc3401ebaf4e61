"""Work a widget keeps for its first paint.

A window being laid out passes its widgets through many sizes before its first frame, and
only the last one is ever seen; and some work (a panel behind a tab, a memory reading) need
not hold that frame up at all. Mixed in before the widget's Qt class.
"""

from __future__ import annotations

from collections.abc import Callable


class FirstPaint:
    """``painted``: the widget has been painted. ``hold(work)``: ``work`` at the first paint
    (the latest held); ``run_held()``: now, for a reader who cannot wait for the paint.
    ``after_first_paint()``: override for what runs once the first frame is drawn."""

    painted = False
    _held: Callable[[], object] | None = None

    def hold(self, work: Callable[[], object]) -> None:
        self._held = work

    def run_held(self) -> None:
        work, self._held = self._held, None
        if work is not None:
            work()

    def paintEvent(self, event) -> None:
        first = not self.painted
        self.painted = True
        self.run_held()
        super().paintEvent(event)
        if first:
            self.after_first_paint()

    def after_first_paint(self) -> None:
        """Nothing by default."""
