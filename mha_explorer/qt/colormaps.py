"""The colours of the attention weights (0..1) as a lookup table, one place for every
view that paints maps itself: the layers grid, the diagram's grid and the lab's maps."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pyqtgraph as pg

from mha_explorer.core.display.colors import WEIGHTS_COLORMAP


@lru_cache(maxsize=4)
def lookup_table(name: str = WEIGHTS_COLORMAP) -> np.ndarray:
    """[256, 3] uint8 colours of pyqtgraph's colour map ``name``, from 0 to 1 (read only:
    every caller shares it)."""
    lut = pg.colormap.get(name).getLookupTable(0.0, 1.0, 256, alpha=False)
    lut.setflags(write=False)
    return lut
