"""Environment values and path flags, checked like the config: a value that cannot
be used is one sentence naming the variable (or flag) and what it accepts.

The window turns such a sentence into a warning and uses the default; the
command line turns a bad flag into exit 2 (a ConfigError).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from mha_explorer.core.errors import ConfigError

SETTINGS_ENV = "MHA_EXPLORER_SETTINGS"
_FILE_FORMS = "the path of a settings file (made if missing)"


def _path_problem(text: str) -> str | None:
    """Why ``text`` cannot name a settings file, or None."""
    if not text.strip():
        return "is empty"
    if "\0" in text:
        return "contains a NUL character"
    if os.path.isdir(Path(text).expanduser()):
        return f"names a folder ({text!r})"
    return None


def settings_from_env(environ: Mapping[str, str] | None = None) -> tuple[Path | None, str | None]:
    """The settings file named by MHA_EXPLORER_SETTINGS, or None for the default
    location; the second item is a one-line warning when the value was unusable."""
    environ = os.environ if environ is None else environ
    raw = environ.get(SETTINGS_ENV)
    if raw is None:
        return None, None
    problem = _path_problem(raw)
    if problem is not None:
        return None, (f"{SETTINGS_ENV} {problem}; it accepts {_FILE_FORMS}; "
                      "using the default settings location")
    return Path(raw).expanduser(), None


def settings_flag(text: str | None) -> str | None:
    """``--settings FILE`` checked; ConfigError (exit 2 on the command line) when it
    cannot name a file. None (no flag) passes through."""
    if text is None:
        return None
    problem = _path_problem(text)
    if problem is not None:
        raise ConfigError("settings", f"argument --settings: the value {problem}; "
                          f"give {_FILE_FORMS}")
    return text
