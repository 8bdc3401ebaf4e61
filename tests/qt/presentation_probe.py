"""Run by test_presentation_fits.py in a process of its own, on an offscreen
platform with one virtual screen per size: opens the window on each screen,
enters presentation mode at the softmax stage, and prints what fits as JSON."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QRect
from PySide6.QtTest import QTest

from mha_explorer.core.config import MHAConfig
from mha_explorer.qt.shell.app import application, build_window
from mha_explorer.qt.shell.settings import Preferences

WORDS = tuple(["the", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired"])
TRACE_WAIT_MS = 120_000


def inside(rect: QRect, area: QRect) -> bool:
    return area.contains(rect.topLeft()) and area.contains(rect.bottomRight())


def bits_on_map(cell) -> bool:
    """The head's entropy in bits on its map: beside its title or on a line under it."""
    return "bits" in cell.title.text() or (cell.footer.isVisible() and "bits" in cell.footer.text())


def probe(screen, folder: Path) -> dict:
    prefs = Preferences(str(folder / f"{screen.name()}.ini"))
    window = build_window(MHAConfig(d_model=512, n_heads=8, batch=1, seq=len(WORDS), tokens=WORDS,
                                    device="cpu"), prefs, stage="softmax")
    window.setScreen(screen)
    window.move(screen.availableGeometry().topLeft())
    window.show()
    window.controller.start()
    waited = 0
    while window.controller.trace is None and waited < TRACE_WAIT_MS:
        QTest.qWait(50)
        waited += 50
    window.heatmaps  # noqa: B018 - built with the first trace
    QTest.qWait(300)  # the heads' grid settles (the window may grow to its new minimum)
    normal = QRect(window.geometry())
    window.set_presentation(True)
    QTest.qWait(300)
    area = screen.geometry()
    buttons = [b.mapToGlobal(b.rect().topLeft()) for b in window.stepper.stage_buttons.values()]
    ends = [b.mapToGlobal(b.rect().bottomRight()) for b in window.stepper.stage_buttons.values()]
    cells = window.heatmaps.cells
    diagram = window.stage_view.diagram
    grid = diagram.mapFromScene(diagram.items_by_key()["grid"].sceneBoundingRect()).boundingRect()
    result = {
        "screen": [area.width(), area.height()],
        "window": [window.geometry().x(), window.geometry().y(),
                   window.geometry().width(), window.geometry().height()],
        "window_inside": inside(window.geometry(), area),
        "buttons_inside": all(area.contains(a) and area.contains(b)
                              for a, b in zip(buttons, ends, strict=True)),
        "buttons_visible": all(b.isVisible() and b.width() >= b.minimumSizeHint().width()
                               for b in window.stepper.stage_buttons.values()),
        "body_pt": window.stage_view.explanation.font().pointSizeF(),
        "title_pt": window.stage_view.title.font().pointSizeF(),
        "diagram_pt": window.stage_view.diagram.smallest_text_points(),
        "axis_pt": (cells[0].left_axis.style["tickFont"] or window.font()).pointSizeF()
        if cells else None,
        "map_px": [min(c.vb.width(), c.vb.height()) for c in cells],
        "grid_px": min(grid.width(), grid.height()),  # the diagram's softmax weights
        # the chosen head, large: its map's height and width; every head in sight, unscrolled
        "focus_px": [window.heatmaps.focus.vb.height(), window.heatmaps.focus.vb.width()],
        "focus_visible": window.heatmaps.focus.isVisible(),
        "words": list(WORDS),
        "maps_visible": len(cells) == 8 and all(not c.visibleRegion().isEmpty() for c in cells),
        "maps_scroll": window.heatmaps.scroll.verticalScrollBar().isVisible(),
        "keys_named": list(window.heatmaps.focus_keys.names),
        # a small map's bits left off it are one hover away
        "bits_readable": all(bits_on_map(c) or "bits" in c.title.toolTip() for c in cells),
        "smallest_px": min(window.stage_view.explanation.fontInfo().pixelSize(),
                           window.stage_view.title.fontInfo().pixelSize(),
                           window.heatmaps.axis_words.fontInfo().pixelSize(),
                           window.stage_view.diagram.smallest_text_points() * 96 / 72),
    }
    window.set_presentation(False)
    QTest.qWait(100)
    result["normal"] = [normal.x(), normal.y(), normal.width(), normal.height()]
    result["after"] = [window.geometry().x(), window.geometry().y(), window.geometry().width(),
                       window.geometry().height()]
    result["restored"] = window.geometry() == normal and not window.isFullScreen()
    result["bits_back"] = all(bits_on_map(c) for c in window.heatmaps.cells)
    result["normal_inside"] = inside(normal, screen.availableGeometry())
    window.close()
    return result


def main() -> None:
    app = application()
    with tempfile.TemporaryDirectory() as tmp:
        results = [probe(screen, Path(tmp)) for screen in app.screens()]
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
