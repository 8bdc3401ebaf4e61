"""A window that starts in presentation (``mha-explorer --present``) and is then left with
Esc has the everyday window's stage row: the Stages dock was restored at presentation's
height, and the stage buttons stood three times their height."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from mha_explorer.core.config import MHAConfig
from mha_explorer.qt.shell.app import build_window
from mha_explorer.qt.shell.settings import Preferences

CFG = MHAConfig(d_model=64, n_heads=4, batch=2, seq=6, device="cpu")
TRACE_TIMEOUT_MS = 60_000  # torch's first import on a slow machine


def test_leaving_a_presentation_begun_at_launch_gives_the_stage_buttons_their_height(
        qtbot, tmp_path, settle):
    window = build_window(CFG, Preferences(str(tmp_path / "settings.ini")), stage="softmax")
    qtbot.addWidget(window)
    window.show()  # placed on the screen as at launch: no size asked for
    window.set_presentation(True)  # then at once, as --present does
    with qtbot.waitSignal(window.controller.trace_ready, timeout=TRACE_TIMEOUT_MS):
        window.controller.start()
    settle(window.controller)  # the maps are built and laid out in presentation
    window.set_presentation(False)  # Esc
    for _ in range(3):
        QApplication.processEvents()
    for stage, button in window.stepper.stage_buttons.items():
        assert button.height() <= button.sizeHint().height() + 2, (stage, button.height())
    window.close()
    window.controller.jobs.thread.wait(TRACE_TIMEOUT_MS)
