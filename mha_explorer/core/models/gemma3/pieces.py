"""Between the words a person types and Gemma 3's own tokens (no torch).

A config holds the tokens as the labels show them (``<bos>`` first, "▁" for a space); this
turns words or a text into those labels and back, and labels into the ids the model reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from mha_explorer.core.errors import ConfigError
from mha_explorer.core.models.gemma3.description import GEMMA3_270M
from mha_explorer.core.models.gemma3.tokenizer import gemma_tokenizer, undisplay_piece

VIEW_MAX_TOKENS = 1024  # a text the stage view computes every stage of (its maps are T × T)
FIRST = GEMMA3_270M.first_token


def detokenize(tokens: Sequence[str]) -> str:
    """The text behind ``tokens``: the model's own pieces joined, or words joined by spaces."""
    if tokens and tokens[0] == FIRST:
        return "".join(undisplay_piece(t) for t in tokens[1:]).replace("▁", " ").lstrip(" ")
    return " ".join(tokens)


def as_pieces(tokens: Sequence[str] | None) -> tuple[str, ...]:
    """``tokens`` (words, or the model's pieces) as the model reads them, <bos> first; the
    default text when there are none. ConfigError for an empty or too long text."""
    text = detokenize(tokens) if tokens else GEMMA3_270M.default_sentence
    if not text.strip():
        raise ConfigError("tokens", "the text is empty: type a few words")
    ids, pieces = gemma_tokenizer().encode(text)
    if len(ids) > VIEW_MAX_TOKENS:
        raise ConfigError("tokens", f"the text is {len(ids):,} tokens with <bos>; the stage view reads "
                          f"at most {VIEW_MAX_TOKENS:,}; shorten it")
    return tuple(pieces)


def token_ids(pieces: Sequence[str]) -> list[int]:
    """The ids of the model's pieces; ConfigError naming the first one it does not know."""
    tok = gemma_tokenizer().tok
    ids = []
    for piece in pieces:
        found = tok.token_to_id(undisplay_piece(piece))
        if found is None:
            raise ConfigError("tokens", f"{piece!r} is not one of {GEMMA3_270M.name}'s tokens; type the "
                              "text so the model's tokenizer splits it")
        ids.append(found)
    return ids
