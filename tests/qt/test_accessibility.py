"""Every control of the window says what it is: a tooltip for the mouse and an
accessible name for a screen reader, including Qt's own buttons on docks, tab
bars and tables, and the controls of the dialogs the window opens."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractSlider,
    QAbstractSpinBox,
    QCheckBox,
    QComboBox,
    QLineEdit,
    QScrollBar,
    QWidget,
)

from mha_explorer.qt.shell.export_dialog import ExportDialog

CONTROLS = (QAbstractButton, QAbstractSpinBox, QComboBox, QLineEdit, QCheckBox, QAbstractSlider)


def unnamed_controls(root: QWidget) -> list[str]:
    missing = []
    for widget in root.findChildren(QWidget):
        if not isinstance(widget, CONTROLS) or isinstance(widget, QScrollBar):
            continue  # scroll bars are part of the area they scroll
        if isinstance(widget, QLineEdit) and isinstance(widget.parent(), (QAbstractSpinBox,
                                                                          QComboBox)):
            continue  # the text field inside a spin box or combo box is that control
        lacks = [what for what, text in (("tooltip", widget.toolTip()),
                                         ("accessible name", widget.accessibleName()))
                 if not text.strip()]
        if lacks:
            label = getattr(widget, "text", lambda: "")()
            missing.append(f"{type(widget).__name__} {widget.objectName()!r} {label!r}: "
                           f"no {' or '.join(lacks)}")
    return missing


def test_every_control_of_the_window_has_a_tooltip_and_a_name(qtbot, shared_window):
    window = shared_window
    window.controller.set_stage("softmax")  # shows the stretch check of the heads panel
    window.heatmaps.open_head(0)  # the large view of one head, with its own controls
    assert unnamed_controls(window) == []


def test_the_same_holds_in_presentation_mode_and_in_the_dark_theme(qtbot, make_window):
    window = make_window()
    window.set_theme("dark", remember=False)
    window.set_presentation(True)
    assert unnamed_controls(window) == []
    window.set_presentation(False)


def test_the_dialogs_name_their_controls(qtbot, shared_window, tmp_path):
    window = shared_window
    help_dialog = window.show_help()
    assert unnamed_controls(help_dialog) == []
    export = ExportDialog(tmp_path, window)
    qtbot.addWidget(export)
    assert unnamed_controls(export) == []
