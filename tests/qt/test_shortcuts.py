"""Every action has a shortcut, no two share one, the key help card lists them all
(read from the actions), and the View toggles are remembered."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QLabel, QWidget

from mha_explorer.qt.shell.key_help import plain
from mha_explorer.qt.shell.settings import Preferences


def menu_actions(window):
    """(text, action) for every item of every menu, submenus included."""
    found = []

    def walk(menu):
        for action in menu.actions():
            if action.isSeparator():
                continue
            if action.menu() is not None:
                walk(action.menu())
            else:
                found.append((plain(action.text()), action))

    for top in window.menuBar().actions():
        walk(top.menu())
    return found


def test_every_menu_action_has_a_shortcut(shared_window):
    window = shared_window
    actions = menu_actions(window)
    assert len(actions) >= 20
    for text, action in actions:
        assert action.shortcuts(), f"'{text}' has no shortcut"
        assert action.toolTip(), f"'{text}' has no tooltip"
        assert action in QWidget.actions(window), f"'{text}' works only while the menus show"
    # the ones the issue names, by key
    keys = {key: window.actions[key].shortcut().toString() for key in
            ("quit", "export", "presentation", "theme", "reduced_motion", "help", "key_help",
             "reset_layout", "next", "previous", "first", "last", "play")}
    assert keys["quit"] == "Ctrl+Q" and keys["export"] == "Ctrl+E"
    assert keys["presentation"] == "F11" and keys["help"] == "F1" and keys["key_help"] == "?"


def test_no_two_actions_share_a_shortcut(shared_window):
    window = shared_window
    owners: dict[str, str] = {}
    for action in QWidget.actions(window):  # window.actions is the dict by key
        for sequence in action.shortcuts():
            key = sequence.toString()
            assert key not in owners, f"{key}: '{owners[key]}' and '{action.text()}'"
            owners[key] = action.text()


def test_question_mark_shows_every_shortcut_and_esc_hides_it(qtbot, make_window):
    window = make_window()
    qtbot.keyClick(window, Qt.Key.Key_Question)
    overlay = window.key_help
    assert overlay.isVisible() and overlay.geometry() == window.rect()
    shown = "\n".join(label.text() for label in overlay.findChildren(QLabel) if label.isVisible())
    for text, action in menu_actions(window):
        assert text in shown, text
        for sequence in action.shortcuts():
            assert sequence.toString(QKeySequence.SequenceFormat.NativeText) in shown, (text, sequence)
    assert "Esc" in shown  # leaving presentation lives on the window alone, and is listed too
    stage = window.controller.stage_index
    qtbot.keyClick(overlay, Qt.Key.Key_Escape)
    assert not overlay.isVisible()
    assert not window.presenting and window.controller.stage_index == stage
    qtbot.keyClick(window, Qt.Key.Key_Right)  # the keys step the stages again
    assert window.controller.stage_index == stage + 1


def test_f1_opens_the_help_page(qtbot, make_window):
    window = make_window()  # the active window: a key goes to it
    qtbot.keyClick(window, Qt.Key.Key_F1)
    dialog = window.help_dialog
    assert dialog is not None and dialog.isVisible()
    text = dialog.browser.toPlainText()
    for panel in ("Stages", "Configuration", "Heads", "Shapes", "Parameters", "Presentation",
                  "Export"):
        assert panel.lower() in text.lower(), panel
    dialog.close()


def test_reduced_motion_is_a_remembered_toggle(qtbot, make_window, tmp_path):
    settings = tmp_path / "motion.ini"
    window = make_window(settings=settings)
    assert not window.stage_view.reduced_motion
    qtbot.keyClick(window, Qt.Key.Key_M, Qt.KeyboardModifier.ControlModifier
                   | Qt.KeyboardModifier.ShiftModifier)
    assert window.stage_view.reduced_motion and window.actions["reduced_motion"].isChecked()
    window.controller.next_stage()
    assert not window.stage_view.is_animating()  # a jump, not a slide
    window.close()
    assert Preferences(str(settings)).value("reduced_motion", False, bool)
    again = make_window(settings=settings, wait=False)
    assert again.stage_view.reduced_motion and again.actions["reduced_motion"].isChecked()


def test_the_theme_is_a_remembered_choice(qtbot, make_window, tmp_path):
    settings = tmp_path / "theme.ini"
    window = make_window(settings=settings)
    assert window.theme.name == "light" and window.actions["theme_light"].isChecked()
    window.actions["theme"].trigger()
    assert window.theme.name == "dark" and window.actions["theme_dark"].isChecked()
    window.close()
    assert Preferences(str(settings)).value("theme", "light") == "dark"
    again = make_window(settings=settings, wait=False)
    assert again.theme.name == "dark"
