"""What the diagram reads from a trace: one head's matrix, as a picture.

Only looks up and colours numbers the engine already computed; nothing here
computes attention. A trace is used only when it belongs to the config on
screen (between an edit and the next trace the old one would be wrong).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import QImage

if TYPE_CHECKING:  # numpy loads with the first trace, not with the window
    import numpy as np

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan import causal_offset

MAX_CELLS = 64  # above this many rows or columns, cells are too small to colour one by one

# colour ramps: (position, RGB)
_DIVERGING = ((0.0, (33, 102, 172)), (0.5, (247, 247, 247)), (1.0, (178, 24, 43)))
_SEQUENTIAL = ((0.0, (255, 255, 255)), (0.5, (107, 174, 214)), (1.0, (8, 48, 107)))
_HIDDEN_RGB = (212, 212, 212)


def matching_trace(trace, cfg: MHAConfig):
    return trace if trace is not None and trace.config == cfg else None


def head_matrix(trace, stage: str, name: str, batch_index: int, head: int) -> np.ndarray | None:
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
    matrix = array[slot, head]
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


def _ramp(t: np.ndarray, stops) -> np.ndarray:
    import numpy as np

    xs = [s[0] for s in stops]
    return np.stack([np.interp(t, xs, [s[1][c] for s in stops]) for c in range(3)], axis=-1)


def _image(rgb: np.ndarray) -> QImage:
    import numpy as np

    rows, cols = rgb.shape[:2]
    rgba = np.empty((rows, cols, 4), dtype=np.uint8)
    rgba[..., :3] = np.clip(rgb, 0, 255).astype(np.uint8)
    rgba[..., 3] = 255
    image = QImage(rgba.data, cols, rows, 4 * cols, QImage.Format.Format_RGBA8888)
    return image.copy()  # own the pixels; the numpy buffer goes away


def scores_image(scores: np.ndarray) -> QImage:
    """Blue below zero, red above, white at zero; hidden (-inf) cells grey."""
    import numpy as np

    finite = np.isfinite(scores)
    limit = float(np.abs(scores[finite]).max()) if finite.any() else 1.0
    t = np.where(finite, scores, 0.0) / (2 * max(limit, 1e-12)) + 0.5
    rgb = _ramp(t, _DIVERGING)
    rgb[~finite] = _HIDDEN_RGB
    return _image(rgb)


def weights_image(weights: np.ndarray) -> QImage:
    """White at 0 to dark blue at the largest weight of this head."""
    top = float(weights.max()) if weights.size else 1.0
    return _image(_ramp(weights / max(top, 1e-12), _SEQUENTIAL))
