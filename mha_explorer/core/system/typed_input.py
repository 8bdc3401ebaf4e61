"""What a person typed, read strictly where it enters the app: text must be UTF-8 and a
whole number is digits, so nothing is read as something other than what was meant.

Text: on POSIX a command-line argument, an environment value or a file name that is
not valid UTF-8 reaches Python with each bad byte as a lone surrogate (U+DC80 to
U+DCFF), and JSON's ``\\ud800`` escapes make lone surrogates too. Such text has no
reading as words (a tokenizer refuses it, a hash cannot encode it), so it is refused
with the bytes named. A file name is the one exception: the system's bytes are kept
exactly as they are (a lossless reading), so paths are never passed through here.

Numbers: ``int()`` also reads "1_000" (kept: Python's own grouping), "١٢" (digits of
other scripts) and, after the old ``replace(",", "")``, "64,64" as 6464. A comma is a
thousands separator in one place and a decimal point or a list in another, so it is
refused, as is anything but ASCII digits.
"""

from __future__ import annotations

__all__ = ["TypedInputError", "bad_bytes", "utf8_text", "whole_number"]

MAX_DIGITS = 30  # a longer number is a slip of the keyboard, and int() of it costs time
SHOWN_CHARS = 40  # of a refused value, in its message


class TypedInputError(ValueError):
    """Typed input that cannot be read; the message is one line for a person."""


def _shown(text: str) -> str:
    cut = text[:SHOWN_CHARS] + ("…" if len(text) > SHOWN_CHARS else "")
    return "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for c in cut)


def _is_surrogate(c: str) -> bool:
    return "\ud800" <= c <= "\udfff"


def bad_bytes(text: str) -> str | None:
    """The part of ``text`` no UTF-8 encodes, for a message ("byte \\xff at character 3"),
    or None when it is all encodable."""
    try:
        text.encode("utf-8")  # at C speed: a config's sentence is validated on every edit
        return None
    except UnicodeEncodeError:
        where = [i for i, c in enumerate(text) if _is_surrogate(c)]
    names = list(dict.fromkeys(
        f"\\x{ord(text[i]) - 0xDC00:02x}" if "\udc80" <= text[i] <= "\udcff" else f"U+{ord(text[i]):04X}"
        for i in where))
    kind = "byte" if all("\udc80" <= text[i] <= "\udcff" for i in where) else "code"
    plural = "s" if len(names) > 1 else ""
    listed = " ".join(names[:8]) + (" …" if len(names) > 8 else "")
    return f"{kind}{plural} {listed} at character {where[0] + 1}"


def utf8_text(text: str, where: str = "") -> str:
    """``text`` when every character has a UTF-8 encoding; TypedInputError naming the bad
    bytes otherwise, after ``where`` (e.g. "the sentence") when given."""
    bad = bad_bytes(text)
    if bad is not None:
        raise TypedInputError(f"{where + ' is ' if where else ''}not UTF-8 text ({bad}); "
                              "save or type it as UTF-8")
    return text


def whole_number(text: str) -> int:
    """A whole number typed as ASCII digits with an optional sign (Python's "1_000"
    grouping allowed, surrounding spaces ignored); TypedInputError otherwise."""
    raw = str(text).strip()
    if "," in raw:
        raise TypedInputError(f"'{_shown(str(text))}' is not a whole number: a comma is not read "
                              "as part of a number; write digits alone (1000, or 1_000 for a thousand)")
    digits = raw.lstrip("+-").replace("_", "")
    if (not raw.isascii() or not digits.isdigit() or raw.count("+") + raw.count("-") > 1
            or len(digits) > MAX_DIGITS):
        raise TypedInputError(f"'{_shown(str(text))}' is not a whole number")
    try:
        return int(raw)  # refuses "_1", "1__0" and "1_" as Python does
    except ValueError:
        raise TypedInputError(f"'{_shown(str(text))}' is not a whole number") from None
