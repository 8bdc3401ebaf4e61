"""The window's menus and their shortcuts, in one place. Every action is also
added to the window, so its shortcut works while the menus are hidden, and a command's chord
(Ctrl, Alt or a function key) works wherever the focus is (``CommandKeys``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import shiboken6
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QAction, QActionGroup, QKeyEvent, QKeySequence
from PySide6.QtWidgets import QApplication

from mha_explorer.qt.shell.theme import THEMES

if TYPE_CHECKING:
    from mha_explorer.qt.shell.main_window import MainWindow


def add_action(window: MainWindow, key: str, text: str, shortcut, slot, menu, tip: str, *,
               checkable: bool = False) -> QAction:
    action = QAction(text, window)
    keys = shortcut if isinstance(shortcut, (list, tuple)) else [shortcut]
    action.setShortcuts([QKeySequence(s) for s in keys])
    action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    action.setToolTip(tip)
    action.setStatusTip(tip)
    action.setCheckable(checkable)
    (action.toggled if checkable else action.triggered).connect(slot)
    if menu is not None:
        menu.addAction(action)
    window.addAction(action)  # shortcuts work while menus are hidden (presentation mode)
    window.actions[key] = action
    return action


COMMAND_MODIFIERS = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier
FUNCTION_KEYS = range(Qt.Key.Key_F1.value, Qt.Key.Key_F35.value + 1)


def is_command(sequence: QKeySequence) -> bool:
    """A chord with Ctrl or Alt, or a function key: never text a field would type. Plain keys
    (the arrows, Space, ?) stay with a focused field."""
    if sequence.count() != 1:
        return False
    combo = sequence[0]
    return bool(combo.keyboardModifiers() & COMMAND_MODIFIERS) or combo.key().value in FUNCTION_KEYS


class CommandKeys(QObject):
    """The window's command shortcuts win over a focused text field or spin box. Before a key
    reaches a shortcut, Qt asks the focused widget whether it wants the key itself
    (ShortcutOverride); a line edit claims its editing keys, and on X11 those include Ctrl+E
    (end of line), so File → Export did nothing while a field had the focus. For a chord that
    is one of the window's commands the question is answered "no" here, so the shortcut runs.
    Only the widget with the focus is watched (an application-wide filter would see every
    event of every widget: a theme switch sends thousands)."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self._window = window
        self._watched: QObject | None = None
        QApplication.instance().focusChanged.connect(self._on_focus)

    def _on_focus(self, _old, new) -> None:
        if self._watched is not None and shiboken6.isValid(self._watched):
            self._watched.removeEventFilter(self)
        self._watched = None
        if new is not None and shiboken6.isValid(self) and new.window() is self._window:
            new.installEventFilter(self)
            self._watched = new

    def _commands(self) -> set[QKeySequence]:
        return {seq for action in self._window.actions.values() if action.isEnabled()
                for seq in action.shortcuts() if is_command(seq)}

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if (event.type() == QEvent.Type.ShortcutOverride and isinstance(event, QKeyEvent)
                and QKeySequence(event.keyCombination()) in self._commands()):
            event.ignore()  # not the field's: the window's shortcut takes it
            return True
        return False


def build_menus(window: MainWindow) -> None:
    """File, Stage, View and Help; every action also works while the menus are hidden."""
    c = window.controller
    bar = window.menuBar()
    file_menu = bar.addMenu("&File")
    add_action(window, "export", "&Export…", "Ctrl+E", window.open_export_dialog, file_menu,
               "Write the stage pictures (PNG, SVG) and the tables (CSV, Markdown)")
    file_menu.addSeparator()
    add_action(window, "quit", "&Quit", "Ctrl+Q", window.close, file_menu, "Close MHA Explorer")

    stage = bar.addMenu("&Stage")
    add_action(window, "previous", "&Previous stage", [Qt.Key.Key_Left, Qt.Key.Key_PageUp],
               c.previous_stage, stage, "Step back one stage (Left)")
    add_action(window, "next", "&Next stage", [Qt.Key.Key_Right, Qt.Key.Key_PageDown],
               c.next_stage, stage, "Step forward one stage (Right)")
    add_action(window, "first", "&First stage", Qt.Key.Key_Home, c.first_stage, stage,
               "Go to the input stage (Home)")
    add_action(window, "last", "&Last stage", Qt.Key.Key_End, c.last_stage, stage,
               "Go to the output stage (End)")
    add_action(window, "compute", "&Compute now", "F5", window.compute_gate.compute_now, stage,
               "Compute the configuration shown (F5)")
    add_action(window, "play", "Play / &pause", Qt.Key.Key_Space, c.toggle_play, stage,
               "Play the stages one after another, or pause (Space)")

    view = bar.addMenu("&View")
    for i, (key, dock) in enumerate(window.docks.items(), start=1):
        toggle = dock.toggleViewAction()
        toggle.setShortcut(QKeySequence(f"Alt+{i}"))
        toggle.setToolTip(f"Show or hide the {dock.windowTitle()} panel (Alt+{i})")
        view.addAction(toggle)
        window.addAction(toggle)
        window.actions[f"toggle_{key}"] = toggle
    add_action(window, "lab", "Head &lab", "Ctrl+L", window.lab.show, view,
               "Train small attention models, watch heads specialise, ablate and prune them (Ctrl+L)")
    add_action(window, "compare", "Compare &models", "Ctrl+K", window.show_compare, view,
               "Every trained model side by side on one text: MHA, MQA and GQA (Ctrl+K)")
    code = add_action(window, "toggle_code", "&Code beside the diagram", "Ctrl+Shift+C",
                      window.stage_view.set_code_visible, view,
                      "Show or hide the PyTorch code (Ctrl+Shift+C; presentation hides it)",
                      checkable=True)
    code.setChecked(True)
    add_action(window, "reset_layout", "&Reset layout", "Ctrl+Shift+R", window.apply_default_layout,
               view, "Put every panel back where it started")
    view.addSeparator()
    add_action(window, "presentation", "Presentation &mode", "F11", window.set_presentation, view,
               "Full screen, projector-sized type, only the controls a class needs "
               "(F11; Esc leaves)", checkable=True)
    leave = add_action(window, "leave_presentation", "Leave presentation mode", "Esc",
                       lambda: window.set_presentation(False), None,
                       "Back to the window as it was")
    leave.setEnabled(False)  # Esc means nothing to the window otherwise
    themes = view.addMenu("&Theme")
    add_action(window, "theme", "&Switch theme", "Ctrl+Shift+T", window.toggle_theme, themes,
               "Switch between the light and the dark theme")
    themes.addSeparator()
    group = QActionGroup(window)
    for theme, keys in zip(THEMES.values(), ("Ctrl+Shift+L", "Ctrl+Shift+D"), strict=True):
        action = add_action(window, f"theme_{theme.name}", f"&{theme.label}", keys,
                            lambda checked, t=theme: checked and window.set_theme(t), themes,
                            f"The {theme.name} theme; every text at 7:1 contrast or more",
                            checkable=True)
        group.addAction(action)
    add_action(window, "reduced_motion", "Reduced &motion", "Ctrl+Shift+M",
               window.set_reduced_motion, view,
               "Jump between stages instead of sliding", checkable=True)

    window.command_keys = CommandKeys(window)

    help_menu = bar.addMenu("&Help")
    add_action(window, "help", "&How to use", "F1", window.show_help, help_menu,
               "What each panel shows and how to drive it (F1)")
    add_action(window, "key_help", "&Keyboard shortcuts", "?", window.show_key_help, help_menu,
               "Every shortcut on one card (?)")
    add_action(window, "about", "&About MHA Explorer", "Shift+F1", window.show_about, help_menu,
               "The version, and each trained model's size and licence (Shift+F1)")
