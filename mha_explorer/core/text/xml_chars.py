"""Text any XML reader accepts: SVG files are XML, and XML 1.0 forbids most control
characters (U+0001 to U+001F but tab and line breaks, U+FFFE, U+FFFF, lone surrogates),
even written as character references. A sentence may hold them (a token "\\x01c"), and
Qt's SVG writer copies them through, so an SVG of such a sentence would not parse."""

from __future__ import annotations

import re

__all__ = ["REPLACEMENT", "well_formed"]

REPLACEMENT = "\ufffd"  # what a renderer shows for a character it cannot show
_FORBIDDEN = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_REFERENCE = re.compile(r"&#(x[0-9a-fA-F]{1,8}|[0-9]{1,10});")


def _allowed(code: int) -> bool:
    return code <= 0x10FFFF and not _FORBIDDEN.match(chr(code))


def _reference(m: re.Match) -> str:
    digits = m.group(1)
    code = int(digits[1:], 16) if digits[0] == "x" else int(digits)
    return m.group(0) if _allowed(code) else f"&#x{ord(REPLACEMENT):X};"


def well_formed(document: bytes) -> bytes:
    """``document`` (UTF-8 XML) with every character XML forbids, and every reference to
    one, replaced by U+FFFD; bytes that are not UTF-8 become U+FFFD too."""
    text = document.decode("utf-8", "replace")
    return _REFERENCE.sub(_reference, _FORBIDDEN.sub(REPLACEMENT, text)).encode("utf-8")
