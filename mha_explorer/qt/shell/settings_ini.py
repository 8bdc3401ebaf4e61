"""The INI text of a settings file as this app lets QSettings read it, and its values compared.

QSettings turns a value beginning with "@Variant(" (or "@DateTime(", and so on) into a Qt
type through QDataStream, however the "@" is written; this app writes none, so such values
are left out before QSettings sees the file. Values read back from INI text are text:
``same_value`` compares them with what a window would set.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings


def same_value(stored, value) -> bool:
    """Whether a value read back from the INI file (text) is ``value`` (QSettings gives
    back "true" for True and "3" for 3)."""
    if isinstance(value, (bool, int, float)) and not isinstance(stored, QByteArray):
        return str(stored).lower() == str(value).lower()
    return stored == value


def _elements(value: str) -> list[str]:
    """A raw INI value split where QSettings makes it a list: at commas outside quotes."""
    parts, current, quoted, escaped = [], [], False, False
    for c in value:
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == '"':
            quoted = not quoted
        elif c == "," and not quoted:
            parts.append("".join(current))
            current = []
            continue
        current.append(c)
    parts.append("".join(current))
    return [p.strip() for p in parts]


def _serialised(element: str) -> bool:
    """Whether QSettings could read ``element`` as a serialised Qt type: it begins, after its
    quote, with "@" (as written, or as an escape such as "\\x40") other than the escaped
    "@@" of a string and the "@ByteArray(" of the window's layout."""
    body = element[1:] if element.startswith('"') else element
    if body.startswith("\\"):
        return True  # an escape there may spell "@"; nothing this app writes begins so
    return body.startswith("@") and not body.startswith(("@@", "@ByteArray("))


def without_serialised_types(data: bytes) -> tuple[bytes, list[str]]:
    """``data`` (an INI file) without the values QSettings would deserialise as Qt types
    (``@Variant(...)`` and the like), and the keys dropped. This app writes none: its values
    are text, numbers, true/false and the layout's byte arrays. A crafted one is read with
    QDataStream, where a list declaring two thousand million entries ended the process
    (std::bad_alloc) before the window could open, at every start."""
    kept, dropped, continued = [], [], False
    for line in data.decode("utf-8", "surrogateescape").split("\n"):
        stripped = line.strip()
        key, sep, value = stripped.partition("=")
        # a value continued on the next line is not one this app writes either: both lines go
        bad = continued or bool(sep) and (stripped.endswith("\\") or any(map(_serialised, _elements(value))))
        continued = bad and stripped.endswith("\\")
        if bad:
            dropped.append(key.strip())
        else:
            kept.append(line)
    return "\n".join(kept).encode("utf-8", "surrogateescape"), dropped


def ini_values(path: Path) -> list[tuple[str, object]]:
    """Every key and value of the INI file ``path`` (none when QSettings cannot read it)."""
    found = QSettings(str(path), QSettings.Format.IniFormat)
    if found.status() != QSettings.Status.NoError:
        return []
    return [(key, found.value(key)) for key in found.allKeys()]
