"""What one engine run computed, as plain numpy and Python values (no torch).

Views and panels read a Trace; only the engine makes one. Keeping the type here
lets the Qt floor annotate what it receives without importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy loads with the first trace, not with the window
    import numpy as np

    from mha_explorer.core.config.record import MHAConfig
    from mha_explorer.core.stages.held import HeldArray


@dataclass
class Trace:
    """What one run computed.

    ``tensors[stage][name]`` holds each stage's tensors in the shapes of the plan, read as
    float32 numpy: numpy arrays from a CPU float32 run, else HeldArrays (core/stages/held.py)
    kept where they were computed, whose indexing copies only the piece read. In ``windowed``
    mode the batch axis holds only ``batch_index`` and the attention matrices only query rows
    ``rows``. In ``rows`` mode they hold only the query rows ``row_ids`` (spread over the
    sequence, each exact), and the stages after the softmax hold nothing (``output`` is None).
    """

    config: MHAConfig
    mode: str  # "full" or "windowed"
    device: str
    tokens_q: tuple[str, ...]
    tokens_kv: tuple[str, ...]
    tensors: dict[str, dict[str, np.ndarray | HeldArray]]
    weights: dict[str, np.ndarray]  # nn.Linear layout: out × in
    output: np.ndarray | HeldArray | None  # Y, [B, T, D] (windowed: [1, T, D] for batch_index; rows: None)
    timings: dict[str, float]
    seconds: float
    batch_index: int | None  # None: every batch element is kept
    rows: tuple[int, int]  # query rows kept in scores / weights
    masked_rows: np.ndarray  # bool [T]: rows with no visible key (their weights are 0)
    estimate_bytes: int
    budget_bytes: int
    notes: tuple[str, ...] = ()
    output_norms: tuple[float, ...] = field(default=())  # ||Y[b]|| for every b
    row_ids: tuple[int, ...] | None = None  # rows mode: the query rows kept, in order
    # rows mode, when the caller estimated it: the likely seconds of computing every row
    every_row_seconds: float | None = None

    @property
    def shown_rows(self) -> tuple[int, ...]:
        """The query rows the attention maps hold, in order."""
        return self.row_ids if self.row_ids is not None else tuple(range(*self.rows))

    def batch_slot(self, b: int) -> int:
        """Index into the stored batch axis for batch element ``b``."""
        if self.batch_index is None:
            return b
        if b != self.batch_index:
            raise IndexError(f"batch element {b} is not kept (kept: {self.batch_index})")
        return 0


def current_trace(trace: Trace | None, config: MHAConfig) -> Trace | None:
    """``trace`` when it was computed for ``config``, else None: between an edit and
    the next run the last trace describes another layer and must not be shown as this one."""
    return trace if trace is not None and trace.config == config else None
