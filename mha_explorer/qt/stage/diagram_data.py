"""One head's matrix as a picture for the stage diagram.

The numbers come from core.diagram_data; the colours are the colour maps the
heads panel uses (core.colors), so a weight looks the same in both places.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import QImage

from mha_explorer.core.display.colors import DIVERGING_COLORMAP, WEIGHTS_COLORMAP

if TYPE_CHECKING:  # numpy loads with the first trace, not with the window
    import numpy as np

_HIDDEN_RGB = (212, 212, 212)


def _colored(positions: np.ndarray, colormap: str) -> np.ndarray:
    """[rows, cols] positions in [0, 1] -> [rows, cols, 3] RGB from a pyqtgraph colour map."""
    import numpy as np

    from mha_explorer.qt.colormaps import lookup_table  # pyqtgraph, loaded with the first trace

    lut = lookup_table(colormap)  # [256, 3] uint8
    index = np.clip(np.rint(np.nan_to_num(positions) * 255), 0, 255).astype(np.intp)
    return lut[index][..., :3].astype(np.float64)


def _image(rgb: np.ndarray) -> QImage:
    import numpy as np

    rows, cols = rgb.shape[:2]
    rgba = np.empty((rows, cols, 4), dtype=np.uint8)
    rgba[..., :3] = np.clip(rgb, 0, 255).astype(np.uint8)
    rgba[..., 3] = 255
    image = QImage(rgba.data, cols, rows, 4 * cols, QImage.Format.Format_RGBA8888)
    return image.copy()  # own the pixels; the numpy buffer goes away


def scores_image(scores: np.ndarray) -> QImage:
    """The heads panel's diverging map, centred on zero; hidden (-inf) cells grey."""
    from mha_explorer.core.display.diagram import scores_positions

    positions, finite = scores_positions(scores)
    rgb = _colored(positions, DIVERGING_COLORMAP)
    rgb[~finite] = _HIDDEN_RGB
    return _image(rgb)


def weights_image(weights: np.ndarray) -> QImage:
    """The heads panel's weights map, from 0 to the largest weight of this head."""
    from mha_explorer.core.display.diagram import weights_positions

    return _image(_colored(weights_positions(weights), WEIGHTS_COLORMAP))
