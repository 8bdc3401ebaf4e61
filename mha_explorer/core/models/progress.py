"""Long work reports how far it got and stops when asked (no torch, no Qt).

Every long step (hashing, converting, loading, generating) takes the same two
callbacks: ``progress(fraction, text)`` with fraction in [0, 1] and a sentence a
person can read ("converting the model: tensor 37 of 236"), and ``cancel()``,
asked between small pieces of work, which stops the work with ``Cancelled`` when
it returns True.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mha_explorer.core.errors import Cancelled, check_cancel

Progress = Callable[[float, str], None]
Cancel = Callable[[], bool]

__all__ = ["Cancel", "Cancelled", "Progress", "Share", "stop_if_asked"]


stop_if_asked = check_cancel  # Cancelled when ``cancel`` says so (None: never); the models' name for it


@dataclass(frozen=True)
class Share:
    """The part [start, end] of a progress bar given to one step of a longer job, so each
    step counts from 0 to 1 and the bar still moves forward once."""

    progress: Progress | None
    start: float = 0.0
    end: float = 1.0

    def __call__(self, fraction: float, text: str) -> None:
        if self.progress is not None:
            fraction = min(max(float(fraction), 0.0), 1.0)
            self.progress(self.start + (self.end - self.start) * fraction, text)

    def part(self, start: float, end: float) -> Share:
        """The sub-range [start, end] of this share (both in this share's own 0..1)."""
        span = self.end - self.start
        return Share(self.progress, self.start + span * start, self.start + span * end)
