"""What the stage diagram reads from a trace, as plain numpy: one head's matrix,
the causal mask's edge, and each cell's place on its colour map.

Only looks up numbers the engine already computed; nothing here computes
attention. No Qt and no torch, so the tests check it without a window; numpy only once
there is a trace to read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.specs.mask_counts import causal_offset

if TYPE_CHECKING:  # numpy loads with the first trace, not with the window
    import numpy as np

    from mha_explorer.core.stages.trace import Trace

MAX_CELLS = 64  # above this many rows or columns, cells are too small to colour one by one


def head_matrix(trace: Trace | None, stage: str, name: str, batch_index: int,
                head: int) -> np.ndarray | None:
    """``trace.tensors[stage][name][b, head]`` when the whole matrix was kept and is small."""
    if trace is None or trace.mode != "full":
        return None
    array = trace.tensors.get(stage, {}).get(name)
    if array is None or array.ndim != 4 or head >= array.shape[1]:
        return None
    try:
        slot = trace.batch_slot(batch_index)
    except IndexError:
        return None
    matrix = array[slot, head]  # [T, S]
    return matrix if max(matrix.shape) <= MAX_CELLS else None


def hidden_from(cfg: MHAConfig) -> list[int] | None:
    """For each query row, the first key it may not see (S when it sees all).

    The config's causal rule, as plan.causal_note states it: top-left lets
    query i see keys 0..i, bottom-right keys 0..i+S-T.
    """
    if not cfg.causal:
        return None
    offset = causal_offset(cfg)
    return [min(cfg.S, max(0, i + offset + 1)) for i in range(cfg.T)]


def scores_positions(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each score's place on a diverging map (0.5 at zero, symmetric about it) and
    which cells are finite (hidden keys are -inf)."""
    import numpy as np

    finite = np.isfinite(scores)
    limit = float(np.abs(scores[finite]).max()) if finite.any() else 1.0
    return np.where(finite, scores, 0.0) / (2 * max(limit, 1e-12)) + 0.5, finite


def weights_positions(weights: np.ndarray) -> np.ndarray:
    """Each weight's place on the weights map: the weight itself, 0 to 1, as the heads panel
    and its colour bar draw it (stretched to each head's largest, a 0.45 was drawn in the
    colour the bar beside it gives 1)."""
    import numpy as np

    return np.clip(weights, 0.0, 1.0)
