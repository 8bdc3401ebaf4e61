"""Run by test_pictures.py in a process of its own, so that the offscreen platform's screens
(every classroom screen, side by side) are set before Qt starts: walks the picture matrix (its
CI sample, or all of it with ``full``) in one window and prints each picture's faults as JSON."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from mha_explorer.cli.pictures import lab_config, offscreen_screens


def main(full: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="mha-explorer-picture-probe-") as tmp:
        folder = Path(tmp)
        offscreen_screens(folder)
        from mha_explorer.qt.gallery.faults import faults
        from mha_explorer.qt.gallery.matrix import cases
        from mha_explorer.qt.gallery.walk import Walk
        from mha_explorer.qt.shell.app import application

        application()
        start = time.monotonic()
        walk = Walk(folder, lab_config(folder / "lab-run"))
        pictures = []
        try:
            for shown in walk.pictures(cases(sample=not full)):
                pictures.append({"picture": shown.name, "setup": shown.case.setup.name,
                                 "stage": shown.stage, "front": shown.front, "mode": shown.case.mode,
                                 "screen": shown.case.screen.name, "theme": shown.case.theme,
                                 "faults": [asdict(f) for f in faults(shown.picture)]})
        finally:
            walk.close()
        json.dump({"pictures": pictures, "skipped": walk.skipped,
                   "seconds": time.monotonic() - start}, sys.stdout)


if __name__ == "__main__":
    main(len(sys.argv) > 1 and sys.argv[1] == "full")
