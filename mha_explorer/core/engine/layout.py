"""Which batch elements and query rows one engine run computes together, and which it keeps.

``full``: every element at once, everything kept. ``windowed``: one element at a time and a
block of query rows at a time, keeping one element and a window of rows for display, so a
long sequence never holds its whole T×S matrix. ``rows``: one element, and only the query
rows its picture shows (spread over the sequence), up to the softmax: what a picture of a
long sequence draws, without the T×S work of the rows it does not.
"""

from __future__ import annotations

from dataclasses import dataclass

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.memory import chunk_rows, picked_rows, shown_rows


@dataclass(frozen=True)
class Layout:
    full: bool
    batches: tuple[range, ...]
    row_blocks: tuple[tuple[int, int], ...]
    rows: tuple[int, int]  # query rows kept for display
    show_batch: int
    picked: tuple[int, ...] | None = None  # mode "rows": the query rows computed and kept
    picked_step: int = 1  # mode "rows": picked rows computed at once

    @classmethod
    def of(cls, cfg: MHAConfig, mode: str, show_batch: int, show_rows_from: int) -> Layout:
        B, T = cfg.batch, cfg.T
        show_batch = show_batch if 0 <= show_batch < B else 0
        if mode == "full":
            return cls(True, (range(B),), ((0, T),), (0, T), show_batch)
        if mode == "rows":
            picked = picked_rows(cfg)
            return cls(False, (range(show_batch, show_batch + 1),), (), (picked[0], picked[-1] + 1),
                       show_batch, picked, chunk_rows(cfg))
        shown = shown_rows(cfg)
        r0 = max(0, min(show_rows_from, T - shown))
        rows = (r0, r0 + shown)
        # block edges include the shown window's, so every block is wholly in or out of it
        edges = sorted({0, T, *rows, *range(0, T, chunk_rows(cfg))})
        blocks = tuple(zip(edges[:-1], edges[1:], strict=True))
        return cls(False, tuple(range(b, b + 1) for b in range(B)), blocks, rows, show_batch)

    def keeps(self, batch: range) -> bool:
        return self.full or batch.start == self.show_batch
