"""The two ways a request ends without a result, for every floor of the app (no imports).

``ConfigError``: what was asked for is not valid, said for a person, with the field at fault
and complete fixes. ``Cancelled``: the person stopped the work before it finished.
"""

from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """An invalid configuration, explained for a person.

    ``field`` names the offending field; ``suggestions`` are complete fixes, each
    a dict of field -> value that makes the config valid when applied.
    """

    def __init__(self, field: str, message: str, suggestions: list[dict[str, Any]] | None = None):
        super().__init__(message)
        self.field = field
        self.message = message
        self.suggestions = suggestions or []


class Cancelled(Exception):
    """The work was stopped through its ``cancel`` callback (or Ctrl+C)."""


def check_cancel(cancel) -> None:
    """Raise Cancelled when ``cancel`` (a callable, or None for work nobody can stop) says so.
    Long loops call this between pieces well under the window's half-second shutdown wait."""
    if cancel is not None and cancel():
        raise Cancelled
