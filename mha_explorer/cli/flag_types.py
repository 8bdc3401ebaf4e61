"""How flag values are read: every value is UTF-8 text (refused by name otherwise), a
number is ASCII digits (core.system.typed_input), and a file or folder name keeps the
system's bytes exactly (``path_text``: the one lossless reading of bytes that are not
UTF-8)."""

from __future__ import annotations

import argparse

from mha_explorer.core.system.typed_input import TypedInputError, utf8_text
from mha_explorer.core.system.typed_input import whole_number as read_whole


def whole_number(text: str) -> int:
    try:
        return read_whole(text)
    except TypedInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def path_text(text: str) -> str:
    """A file or folder name, as the system gave it (not checked as UTF-8)."""
    return text


def checked_value(action: argparse.Action, text: str) -> None:
    """ArgumentError naming the flag when ``text`` is not UTF-8 (a path is let through)."""
    if action.type is path_text:
        return
    try:
        utf8_text(text)
    except TypedInputError as exc:
        raise argparse.ArgumentError(action, str(exc)) from None
