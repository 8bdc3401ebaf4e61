"""The key help overlay (``?``): every shortcut of the window on one card.

The list is read from the window's menus and actions each time it opens, so a
shortcut is written once, where its action is made, and can never be listed
wrong here.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QAction, QColor, QKeySequence, QPainter
from PySide6.QtWidgets import QFrame, QGridLayout, QHBoxLayout, QLabel, QMainWindow, QMenu, QWidget

CLOSE_KEYS = (Qt.Key.Key_Escape, Qt.Key.Key_Question, Qt.Key.Key_F1)
GROUPS_PER_COLUMN = 2
SCRIM_ALPHA = 150


def plain(text: str) -> str:
    """A menu text without its mnemonic: '&Next stage' -> 'Next stage', '&&' -> '&'."""
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&")


def key_texts(action: QAction) -> list[str]:
    return [s.toString(QKeySequence.SequenceFormat.NativeText) for s in action.shortcuts()
            if not s.isEmpty()]


def _menu_rows(menu: QMenu, prefix: str = "") -> list[tuple[str, QAction]]:
    rows = []
    for action in menu.actions():
        if action.isSeparator():
            continue
        if action.menu() is not None:
            rows += _menu_rows(action.menu(), f"{plain(action.text())}: ")
        else:
            rows.append((prefix + plain(action.text()), action))
    return rows


def shortcut_groups(window: QMainWindow) -> list[tuple[str, list[tuple[str, list[str]]]]]:
    """[(menu title, [(action text, [key, ...]), ...]), ...] for the window's menus,
    then the actions that live on the window alone (Esc leaves presentation mode)."""
    groups, listed = [], set()
    for top in window.menuBar().actions():
        if top.menu() is None:
            continue
        rows = _menu_rows(top.menu())
        listed.update(id(a) for _, a in rows)
        groups.append((plain(top.text()), [(text, key_texts(a)) for text, a in rows]))
    # QWidget.actions itself: MainWindow.actions is its dict of actions by key
    extra = [(plain(a.text()), key_texts(a)) for a in QWidget.actions(window)
             if id(a) not in listed and key_texts(a)]
    if extra:
        groups.append(("Other keys", extra))
    return groups


class KeyHelpOverlay(QWidget):
    """A dimmed sheet over the whole window with the shortcuts on a card.
    Esc, ?, F1 or a click closes it."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.setObjectName("key_help")
        self.setAccessibleName("Keyboard shortcuts")
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self._window = window
        self.card = QFrame(self)
        self.card.setObjectName("key_help_card")
        self._grid = QGridLayout(self.card)
        self._grid.setContentsMargins(24, 18, 24, 18)
        self._grid.setHorizontalSpacing(28)
        layout = QHBoxLayout(self)
        layout.addWidget(self.card, 0, Qt.AlignmentFlag.AlignCenter)  # its own size, centred
        window.installEventFilter(self)  # follow the window's size
        self.hide()

    # public -------------------------------------------------------------------------
    def open(self) -> None:
        self._fill()
        self.setGeometry(self._window.rect())
        self.show()
        self.raise_()
        self.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def listed(self) -> list[tuple[str, list[str]]]:
        """(action text, keys) for every row shown: for the tests."""
        return [row for _, rows in shortcut_groups(self._window) for row in rows]

    # building -----------------------------------------------------------------------------
    def _fill(self) -> None:
        while self._grid.count():
            item = self._grid.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        heading = QLabel("<b>Keyboard shortcuts</b> — Esc, ? or a click closes this")
        self._grid.addWidget(heading, 0, 0, 1, -1)
        groups = shortcut_groups(self._window)
        row, column = 1, 0
        for i, (title, rows) in enumerate(groups):
            if i and i % GROUPS_PER_COLUMN == 0:  # a new column of groups
                row, column = 1, column + 2
            title_label = QLabel(f"<b>{title}</b>")
            if row > 1:  # air above a group that follows another
                title_label.setContentsMargins(0, title_label.fontMetrics().height() // 2, 0, 0)
            self._grid.addWidget(title_label, row, column, 1, 2)
            row += 1
            for text, keys in rows:
                self._grid.addWidget(QLabel(text), row, column)
                self._grid.addWidget(self._keys(keys), row, column + 1)
                row += 1

    @staticmethod
    def _keys(keys: list[str]) -> QWidget:
        box = QWidget()
        layout = QHBoxLayout(box)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        for key in keys or ["—"]:
            label = QLabel(key)
            label.setProperty("role", "key")  # drawn as a key cap by the theme
            layout.addWidget(label)
        layout.addStretch(1)
        return box

    # behaviour --------------------------------------------------------------------------
    def paintEvent(self, _event) -> None:
        # a dark scrim over the window behind the card: it recedes in either theme
        QPainter(self).fillRect(self.rect(), QColor(0, 0, 0, SCRIM_ALPHA))

    def event(self, event) -> bool:
        # the window's shortcuts (Esc leaves presentation, ? opens this) must not
        # fire while the card is up: its own keys close it
        if event.type() == QEvent.Type.ShortcutOverride and event.key() in CLOSE_KEYS:
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event) -> None:
        if event.key() in CLOSE_KEYS:
            self.hide()
        else:
            super().keyPressEvent(event)

    def mousePressEvent(self, _event) -> None:
        self.hide()

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        self._window.setFocus(Qt.FocusReason.OtherFocusReason)  # the keys step stages again

    def eventFilter(self, watched, event) -> bool:
        if watched is self._window and event.type() == QEvent.Type.Resize and self.isVisible():
            self.setGeometry(self._window.rect())
        return super().eventFilter(watched, event)
