"""Help → About: the app's version, and every trained model's size and licence — a model's
terms of use readable in full from the package that ships them."""

from __future__ import annotations

import importlib.metadata

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QPushButton, QTextBrowser, QVBoxLayout, QWidget

from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.licences import about_models, terms_text


def app_version() -> str:
    try:
        return importlib.metadata.version("mha-explorer")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree
        return "from source"


class AboutDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("about_dialog")
        self.setWindowTitle("About MHA Explorer")
        self.browser = QTextBrowser(objectName="about_text")
        self.browser.setAccessibleName("About MHA Explorer")
        self.browser.setOpenExternalLinks(False)
        self.show_about()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        self.terms_buttons: dict[str, QPushButton] = {}
        for model in MODELS.values():
            if model.distribution.terms_file is None:
                continue
            button = QPushButton(f"{model.name}: terms of use", objectName=f"terms_{model.key}")
            text = terms_text(model)
            button.setEnabled(text is not None)
            button.setToolTip("The full text, as the installed package ships it" if text is not None
                              else f"Not installed: {model.distribution.install_hint}")
            button.clicked.connect(lambda _=False, t=text: t is not None and self.browser.setHtml(t))
            buttons.addButton(button, QDialogButtonBox.ButtonRole.ActionRole)
            self.terms_buttons[model.key] = button
        about = QPushButton("About", objectName="about_page")
        about.clicked.connect(self.show_about)
        buttons.addButton(about, QDialogButtonBox.ButtonRole.ActionRole)
        layout = QVBoxLayout(self)
        layout.addWidget(self.browser, 1)
        layout.addWidget(buttons)
        metrics = self.fontMetrics()
        self.resize(metrics.averageCharWidth() * 90, metrics.lineSpacing() * 26)

    def show_about(self) -> None:
        self.browser.setMarkdown(
            f"# MHA Explorer {app_version()}\n\n"
            "Multi-head attention, stage by stage. Computed with PyTorch; drawn with Qt "
            "(PySide6) and pyqtgraph.\n\n"
            "## Trained models\n\n"
            "Read only from installed packages, never downloaded while the app runs; "
            "the app works without them, with random weights.\n\n"
            f"{about_models()}\n")
