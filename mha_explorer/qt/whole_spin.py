"""A spin box that reads a number as it is written: Qt's QSpinBox, when its range reaches
1,000, drops a group separator wherever it stands, so "64,64" became 6464 and "1,0"
became 10 while the field still showed what was typed. Here a separator counts only
where the box itself would put one ("6,464"); anywhere else the text is left as typed,
the value does not change, and ``refused`` says why in one line (empty once it reads)."""

from __future__ import annotations

import re

from PySide6.QtCore import Signal
from PySide6.QtGui import QValidator
from PySide6.QtWidgets import QSpinBox


class WholeSpinBox(QSpinBox):
    refused = Signal(str)  # one line for the field's inline note; "" when the text reads

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._typed = ""
        self._said = ""
        self.lineEdit().textEdited.connect(self._on_typed)
        self.editingFinished.connect(self._on_finished)

    def _body(self, text: str) -> str:
        body = text.removeprefix(self.prefix()).removesuffix(self.suffix()) if text else text
        return body.strip()

    def misgrouped(self, text: str) -> bool:
        """Whether ``text`` has a group separator where the box would not put one."""
        sep = self.locale().groupSeparator()
        body = self._body(text)
        if not sep or sep not in body:
            return False
        return re.fullmatch(rf"[+-]?[0-9]{{1,3}}({re.escape(sep)}[0-9]{{3}})*", body) is None

    def validate(self, text: str, pos: int):  # Qt's, for every keystroke and paste
        if self.misgrouped(text):
            return QValidator.State.Intermediate, text, pos  # shown as typed, never read as digits
        return super().validate(text, pos)

    def fixup(self, text: str) -> str:  # Qt's, on Enter: its own drops every separator
        return text if self.misgrouped(text) else super().fixup(text)

    def _on_typed(self, text: str) -> None:
        self._typed = text
        if not self.misgrouped(text):
            self._say("")  # reads again: the note goes (none is shown mid-number, as "6," is typed)

    def _on_finished(self) -> None:
        """Enter or leaving the field: Qt puts back the last value it read; the note says so."""
        if self.misgrouped(self._typed):
            self._say(f"'{self._body(self._typed)}' is not a number: '{self.locale().groupSeparator()}' only "
                      f"separates thousands, so it was not read (still {self.value():,})")

    def _say(self, said: str) -> None:
        if said != self._said:
            self._said = said
            self.refused.emit(said)
