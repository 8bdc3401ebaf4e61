"""The pyqtgraph internals the heads panel relies on are still there.

TokenAxis and MapImage override or read parts of pyqtgraph that have no public
equivalent (they keep a grid of maps to one layout pass per paint). A pyqtgraph
release that renames one would otherwise degrade silently: this test names the
hook, so the fix (or the upper bound in pyproject.toml) is obvious.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtGui import QImage

AXIS_METHODS = ("_updateLabel", "_updateWidth", "_updateHeight", "generateDrawSpecs")
AXIS_ATTRIBUTES = ("textWidth", "textHeight", "picture", "label")


@pytest.mark.parametrize("name", AXIS_METHODS)
def test_axis_item_methods_that_token_axis_overrides_or_calls(name):
    assert callable(getattr(pg.AxisItem, name, None)), (
        f"pyqtgraph {pg.__version__} has no AxisItem.{name}: "
        f"mha_explorer/qt/heads/token_axis.py relies on it")


@pytest.mark.parametrize("name", AXIS_ATTRIBUTES)
def test_axis_item_attributes_that_token_axis_reads(qapp, name):
    axis = pg.AxisItem("left")
    assert hasattr(axis, name), (
        f"pyqtgraph {pg.__version__} AxisItem has no '{name}' attribute: "
        f"mha_explorer/qt/heads/token_axis.py relies on it")


def test_image_item_render_fills_qimage(qapp):
    assert callable(getattr(pg.ImageItem, "render", None)), (
        f"pyqtgraph {pg.__version__} has no ImageItem.render: "
        "mha_explorer/qt/heads/map_image.py (MapImage) overrides it")
    item = pg.ImageItem(np.arange(12, dtype=np.float32).reshape(3, 4), levels=(0, 11))
    item.render()
    assert isinstance(getattr(item, "qimage", None), QImage), (
        f"pyqtgraph {pg.__version__} ImageItem.render no longer leaves a QImage in "
        "'qimage': mha_explorer/qt/heads/map_image.py (MapImage) converts it in place")


IMAGE_DOWNSAMPLE_HOOKS = ("_computeDownsampleFactors", "_lastDownsample", "_imageHasNans",
                          "_imageNanLocations", "_nanPolicy", "autoDownsample")


@pytest.mark.parametrize("name", IMAGE_DOWNSAMPLE_HOOKS)
def test_image_item_downsampling_parts_that_map_image_uses(qapp, name):
    item = pg.ImageItem(np.zeros((4, 4), dtype=np.float32))
    assert hasattr(item, name), (
        f"pyqtgraph {pg.__version__} ImageItem has no '{name}': mha_explorer/qt/heads/map_image.py "
        "(MapImage._reduced) averages a large map itself and hands pyqtgraph the means")
