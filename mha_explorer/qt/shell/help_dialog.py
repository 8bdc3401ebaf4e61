"""Help → How to use (F1): a short page on what each panel shows and how to drive it.

The text lives in resources/help.md, so it is written (and reviewed) as prose,
not as Python strings.
"""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from mha_explorer import assets

HELP_FILE = "help.md"
PAGES = (HELP_FILE, "help_trained.md")  # the pages that link to each other


class HelpDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("help_dialog")
        self.setWindowTitle("How to use MHA Explorer")
        self.browser = QTextBrowser()
        self.browser.setObjectName("help_text")
        self.browser.setAccessibleName("How to use MHA Explorer")
        self.browser.setToolTip("What each panel shows and how to drive it")
        self.browser.setOpenExternalLinks(False)
        self.browser.setOpenLinks(False)  # links between the pages are followed below
        self.browser.anchorClicked.connect(self.show_page)
        self.browser.setMarkdown(assets.read_text(HELP_FILE))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close = buttons.button(QDialogButtonBox.StandardButton.Close)
        close.setAccessibleName("Close help")
        close.setToolTip("Close this page (Esc)")
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.browser, 1)
        layout.addWidget(buttons)
        # about 70 characters a line, in any type size, but never larger than the window
        metrics = self.fontMetrics()
        width, height = metrics.averageCharWidth() * 96, metrics.lineSpacing() * 40
        if parent is not None:
            width = min(width, int(parent.width() * 0.9))
            height = min(height, int(parent.height() * 0.9))
        self.resize(width, height)

    def show_page(self, url) -> None:
        """Follow a link to another help page (``help_trained.md``); others are ignored."""
        name = url.toString() if hasattr(url, "toString") else str(url)
        if name in PAGES:
            self.browser.setMarkdown(assets.read_text(name))
