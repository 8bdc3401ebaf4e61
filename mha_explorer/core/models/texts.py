"""What a typed text must be before a trained model reads it (no torch)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from mha_explorer.core.errors import ConfigError


def check_text(text: Any) -> str:
    """``text``, or ConfigError (one line) when it is empty or holds bytes that are not UTF-8
    (the command line passes such bytes on as lone surrogates, which no tokenizer reads)."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError("tokens", "the text is empty: type a few words")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        bad = text[err.start:err.end].encode("utf-8", "surrogateescape")
        raise ConfigError("tokens", f"the text holds bytes that are not UTF-8 ({bad.hex(' ')} at character "
                          f"{err.start + 1}); type it again as UTF-8") from None
    return text


def ids_of_pieces(lookup: Callable[[str], int | None], pieces: Iterable[str], unknown: str) -> list[int]:
    """The vocabulary ids ``lookup`` gives the labels ``pieces``; ConfigError naming the first one
    it does not know, followed by ``unknown`` (what to do about it)."""
    ids = []
    for piece in pieces:
        found = lookup(piece)
        if found is None:
            raise ConfigError("tokens", f"{piece!r} is not one of {unknown}")
        ids.append(found)
    return ids
