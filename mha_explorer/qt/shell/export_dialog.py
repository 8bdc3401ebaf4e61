"""File → Export… (Ctrl+E): where to, which stages, what size, which formats.

The dialog only gathers the choices; ``MainWindow.export_current`` does the
writing through qt.export, the same code the command line uses.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from mha_explorer.core.specs.export import DEFAULT_SIZE, FORMATS, check_folder
from mha_explorer.qt.shell.export import ExportOptions
from mha_explorer.qt.shell.projector_style import grows_with_text

SIZES = ((1920, 1080), (1280, 720), (3840, 2160), (1024, 768))


def _describe(widget: QWidget, name: str, tip: str) -> QWidget:
    widget.setAccessibleName(name)
    widget.setToolTip(tip)
    return widget


class ExportDialog(QDialog):
    def __init__(self, folder: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("export_dialog")
        self.setWindowTitle("Export")
        self.folder_edit = _describe(QLineEdit(str(folder)), "Export folder",
                                     "Where the pictures and tables are written")
        browse = _describe(QPushButton("Browse…"), "Choose export folder",
                           "Pick the folder in a file dialog")
        browse.clicked.connect(self._browse)
        folder_row = QHBoxLayout()
        folder_row.addWidget(self.folder_edit, 1)
        folder_row.addWidget(browse)

        self.stages_combo = _describe(QComboBox(), "Stages to export",
                                      "The stage on screen, or all nine one after another")
        self.stages_combo.addItem("the current stage", "current")
        self.stages_combo.addItem("all nine stages", "all")
        self.size_combo = _describe(QComboBox(), "Picture size",
                                    "Width × height of every picture, in pixels")
        for w, h in SIZES:
            self.size_combo.addItem(f"{w} × {h}", (w, h))
        self.size_combo.setCurrentIndex(SIZES.index(DEFAULT_SIZE))
        self.format_checks = {}
        formats_row = QHBoxLayout()
        for fmt in FORMATS:
            check = _describe(grows_with_text(QCheckBox(fmt.upper())), f"Write {fmt.upper()}",
                              "PNG: a picture for slides" if fmt == "png"
                              else "SVG: vector text and lines that stay sharp at any size")
            check.setChecked(True)
            self.format_checks[fmt] = check
            formats_row.addWidget(check)
        tables = grows_with_text(QCheckBox("shapes and parameter tables (CSV, Markdown)"))
        self.tables_check = _describe(tables, "Write the tables",
                                      "shapes.csv, shapes.md, params.csv and params.md")
        self.tables_check.setChecked(True)
        formats_row.addStretch(1)

        # a folder that cannot be used is said here, and the dialog stays open
        self.folder_error = _describe(QLabel(), "Folder problem", "Why this folder cannot be used")
        self.folder_error.setTextFormat(Qt.TextFormat.PlainText)
        self.folder_error.setWordWrap(True)
        self.folder_error.hide()
        self.folder_edit.textEdited.connect(self.folder_error.hide)

        form = QFormLayout(self)
        folder_label = QLabel("&Folder")  # a label of its own: a row of widgets is no buddy
        folder_label.setBuddy(self.folder_edit)
        form.addRow(folder_label, folder_row)
        form.addRow("", self.folder_error)
        form.addRow("S&tages", self.stages_combo)
        form.addRow("&Size", self.size_combo)
        form.addRow("Formats", formats_row)
        form.addRow("", self.tables_check)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setText("Export")
        _describe(ok, "Export", "Write the files")
        _describe(self.buttons.button(QDialogButtonBox.StandardButton.Cancel), "Cancel",
                  "Close without writing anything (Esc)")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form.addRow(self.buttons)
        for check in (*self.format_checks.values(), self.tables_check):
            check.toggled.connect(self._allow)

    def _browse(self) -> None:
        chosen = QFileDialog.getExistingDirectory(self, "Export to", self.folder_edit.text())
        if chosen:
            self.folder_edit.setText(chosen)

    def accept(self) -> None:
        try:
            check_folder(self.folder_edit.text())
        except (ValueError, OSError) as exc:
            self.folder_error.setText(exc.strerror if isinstance(exc, OSError) and exc.strerror
                                      else str(exc))
            self.folder_error.show()
            self.folder_edit.setFocus()
            return
        super().accept()

    def _allow(self) -> None:
        anything = any(c.isChecked() for c in (*self.format_checks.values(), self.tables_check))
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(anything)

    # the choices ----------------------------------------------------------------------
    def folder(self) -> Path:
        return Path(self.folder_edit.text()).expanduser()

    def all_stages(self) -> bool:
        return self.stages_combo.currentData() == "all"

    def options(self) -> ExportOptions:
        formats = tuple(f for f, c in self.format_checks.items() if c.isChecked())
        return ExportOptions(size=self.size_combo.currentData(), formats=formats,
                             tables=self.tables_check.isChecked())
