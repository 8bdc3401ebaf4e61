"""The picture inside a head's map: an ImageItem that shrinks a large map itself and keeps
what it draws in a format Qt scales quickly (both on the GUI thread, at every render)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QImage

# Above about a screenful of pixels, averaging blocks before colouring is
# cheaper than colouring every pixel and letting Qt drop most of them.
AUTO_DOWNSAMPLE_PIXELS = 1 << 21
FAST_FORMAT_PIXELS = 1 << 19  # see MapImage


class MapImage(pg.ImageItem):
    """An ImageItem whose picture is kept in a format Qt scales quickly.

    Uses pyqtgraph internals (``render`` and the ``qimage`` it fills), which have no
    public equivalent: pyproject pins pyqtgraph below the next minor release and
    tests/qt/test_pyqtgraph_hooks.py names the hook if one disappears.

    pyqtgraph hands Qt an 8-bit indexed image (a colour table of the LUT), or
    RGBA8888 where NaN cells are transparent. Qt scales neither natively: it
    converts pixel by pixel on every paint, about five times slower than for
    32-bit pixels. Converting once per new image pays for itself on the first
    paint, up to sources of about 512 x 512; larger ones are drawn as they are.
    """

    def render(self) -> None:
        reduced = self._reduced()
        if reduced is None:
            super().render()
        else:  # pyqtgraph renders the block means as if it had made them itself
            full, factors = self.image, self._lastDownsample
            self.image, self.autoDownsample, self._imageNanLocations = reduced, False, None
            try:
                super().render()
            finally:
                self.image, self.autoDownsample, self._lastDownsample = full, True, factors
                self._imageNanLocations = None  # found in the reduced picture, not this one
        qimage = self.qimage
        if qimage is None or qimage.width() * qimage.height() > FAST_FORMAT_PIXELS:
            return
        fmt = qimage.format()
        if fmt == QImage.Format.Format_Indexed8 and not qimage.hasAlphaChannel():
            self.qimage = qimage.convertToFormat(QImage.Format.Format_RGB32)
        elif fmt not in (QImage.Format.Format_RGB32, QImage.Format.Format_ARGB32_Premultiplied):
            self.qimage = qimage.convertToFormat(QImage.Format.Format_ARGB32_Premultiplied)


    def _reduced(self) -> np.ndarray | None:
        """The block means pyqtgraph's auto-downsampling draws, in one pass over the map.

        pyqtgraph averages along x, then along y: for a 4096 x 1024 map in a cell a few
        hundred pixels wide, pairs of columns first, which numpy does slowly (about 40-80 ms
        a render on a busy machine, and a new map is rendered twice as its cell settles).
        Averaging whole rows first, then the columns of what is left, takes a few ms; the
        means are the same up to float32 rounding. None: pyqtgraph's own way.
        """
        image = self.image
        if (not self.autoDownsample or image is None or image.ndim != 2 or image.size == 0
                or self.axisOrder != "row-major" or image.dtype.kind != "f"):
            return None
        xds, yds = self._computeDownsampleFactors()
        if xds is None or xds * yds == 1:
            return None
        if self._imageHasNans is None:  # as pyqtgraph finds it, on the whole map
            self._imageHasNans = bool(np.isnan(image.min()))
        if self._imageHasNans and self._nanPolicy != "propagate":
            return None
        rows, cols = image.shape[0] // yds, image.shape[1] // xds
        self._lastDownsample = (xds, yds)
        # y first, over whole rows: [rows*yds, C] -> [rows, yds, C], the mean of each yds rows
        tall = image[:rows * yds].reshape(rows, yds, image.shape[1]).mean(axis=1)
        # then x on what is left: [rows, cols*xds] -> [rows, cols, xds]
        return tall[:, :cols * xds].reshape(rows, cols, xds).mean(axis=2)
