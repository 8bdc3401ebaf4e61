"""The colours of the attention weights (0..1) as a lookup table, one place for every
view that paints maps itself: the layers grid, the diagram's grid and the lab's maps.

pyqtgraph is imported on the first call, not with this module: the docks that import it are
built at start-up, and their first map comes after the window is on screen."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from mha_explorer.core.display.colors import WEIGHTS_COLORMAP

if TYPE_CHECKING:
    import numpy as np


@lru_cache(maxsize=4)
def lookup_table(name: str = WEIGHTS_COLORMAP) -> np.ndarray:
    """[256, 3] uint8 colours of pyqtgraph's colour map ``name``, from 0 to 1 (read only:
    every caller shares it)."""
    import pyqtgraph as pg

    lut = pg.colormap.get(name).getLookupTable(0.0, 1.0, 256, alpha=False)
    lut.setflags(write=False)
    return lut
