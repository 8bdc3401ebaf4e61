"""Progress of long command-line work: a tqdm bar on stderr, only when stderr is a
terminal, so a script reading stdout (or --json) sees nothing extra."""

from __future__ import annotations

import sys

DELAY_S = 0.5


class Progress:
    """A bar over ``total`` units; ``to(done)`` moves it, ``fraction(f)`` too."""

    def __init__(self, total: int, unit: str, label: str):
        self.bar = None
        self.total = max(1, int(total))
        if sys.stderr is not None and sys.stderr.isatty():
            from tqdm import tqdm

            # delay: work done within half a second never flashes a bar
            self.bar = tqdm(total=self.total, file=sys.stderr, unit=unit, desc=label, delay=DELAY_S,
                            dynamic_ncols=True, leave=False, unit_scale=True)

    def to(self, done: int) -> None:
        if self.bar is not None:
            self.bar.update(min(self.total, int(done)) - self.bar.n)

    def fraction(self, f: float) -> None:
        self.to(round(f * self.total))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()
