"""``mha-explorer --present`` (the README's "F11 (or ``--present``)") opens the window in
presentation mode: the command line's own path, from its flags to the running window, in a
process of its own (an application whose event loop has ended cannot run another)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = r"""
import json, sys
from PySide6.QtCore import QTimer
from mha_explorer.cli import main
from mha_explorer.qt.early_engine import EarlyEngine
from mha_explorer.qt.shell.app import application
from mha_explorer.qt.shell.main_window import MainWindow

# the process that computes a launch's first trace is not what this is about
EarlyEngine.start = classmethod(lambda cls: None)
app = application()  # the one the command's window uses
seen = {}


def look():
    window = next(w for w in app.topLevelWidgets() if isinstance(w, MainWindow))
    seen.update(presenting=window.presenting, full_screen=window.isFullScreen(),
                checked=window.actions["presentation"].isChecked(), menu_bar=window.menuBar().isVisible())
    seen["window"] = window
    window.close()  # as a person would; the command then returns
    app.quit()


# at the event loop's second turn: the first starts the window's computing (run_app)
QTimer.singleShot(0, lambda: QTimer.singleShot(0, look))
code = main(sys.argv[1:])
thread = seen.pop("window").controller.jobs.thread
thread.wait(60_000)  # a torch import under way is let go by the close, and ends alone
print(json.dumps({"code": code, "thread_ended": not thread.isRunning(), **seen}))
"""


def test_present_opens_the_window_in_presentation_mode(tmp_path):
    argv = ["--present", "--settings", str(tmp_path / "settings.ini"),
            "--d-model", "64", "--heads", "4", "--batch", "1", "--seq", "6"]
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"code": 0, "thread_ended": True, "presenting": True, "full_screen": True,
                    "checked": True, "menu_bar": False}
