"""The window's command shortcuts (Ctrl+E, F11, F1, Ctrl+L and every other chord) work wherever
the focus is, a text field or a spin box included, while the plain keys a field types or moves
with stay the field's.

On X11 a line edit claims Ctrl+E for itself (end of line) when Qt asks the focused widget first
(ShortcutOverride); the offscreen platform has no such binding, so a field that claims every
key, as that one claims Ctrl+E, stands in for it here."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QLineEdit

from mha_explorer.core.config import MHAConfig

CHORDS = {
    "export": (Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier),
    "presentation": (Qt.Key.Key_F11, Qt.KeyboardModifier.NoModifier),
    "help": (Qt.Key.Key_F1, Qt.KeyboardModifier.NoModifier),
    "lab": (Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier),
}


class GreedyField(QLineEdit):
    """A field that claims every key before the shortcuts, as X11's line edit claims Ctrl+E."""

    def event(self, event) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.ShortcutOverride:
            event.accept()
            return True
        return super().event(event)


@pytest.fixture
def window(make_window):
    return make_window(MHAConfig(d_model=64, n_heads=4, seq=6, device="cpu"), wait=False)


def _count_triggers(window) -> dict[str, int]:
    """Each command's action counts its triggers instead of opening its dialog or window."""
    hits = dict.fromkeys(CHORDS, 0)
    for key in CHORDS:
        action = window.actions[key]
        signal = action.toggled if action.isCheckable() else action.triggered
        signal.disconnect()
        signal.connect(lambda *_a, k=key: hits.__setitem__(k, hits[k] + 1))
    return hits


def test_the_commands_work_while_a_field_has_the_focus(qtbot, window):
    hits = _count_triggers(window)
    greedy = GreedyField(window.controls)
    greedy.show()
    fields = [window.controls.sentence_edit, window.controls.d_model_spin, window.weights_panel.combo,
              greedy]
    for field in fields:
        field.setFocus()
        qtbot.waitUntil(field.hasFocus)
        for key, (code, modifiers) in CHORDS.items():
            before = hits[key]
            qtbot.keyClick(field, code, modifiers)
            assert hits[key] == before + 1, f"{key} did nothing while {type(field).__name__} had the focus"


def test_the_plain_keys_stay_with_the_field(qtbot, window):
    c = window.controller
    field = window.controls.sentence_edit
    field.setFocus()
    qtbot.waitUntil(field.hasFocus)
    qtbot.keyClicks(field, "the cat")
    stage = c.stage
    qtbot.keyClick(field, Qt.Key.Key_Left)
    qtbot.keyClick(field, Qt.Key.Key_Right)
    qtbot.keyClick(field, Qt.Key.Key_Question)
    assert c.stage == stage and field.text() == "the cat?" and field.hasFocus()


def test_every_chord_of_the_window_counts_as_a_command():
    # the window's own shortcuts sorted the same way: chords are commands, plain keys are not
    from PySide6.QtGui import QKeySequence

    from mha_explorer.qt.shell.menus import is_command

    assert is_command(QKeySequence("Ctrl+E")) and is_command(QKeySequence("F11"))
    assert is_command(QKeySequence("Alt+3")) and is_command(QKeySequence("Ctrl+Shift+T"))
    assert not is_command(QKeySequence("?")) and not is_command(QKeySequence(Qt.Key.Key_Left))
    assert not is_command(QKeySequence(Qt.Key.Key_Space))
