"""Between the words a person types and a decoder's own tokens (no torch).

A config holds the tokens as the labels show them (the model's first token first, where it
has one; "▁" for a space); this turns words or a text into those labels and back, and labels
into the ids the model reads.

Labels and words are told apart by the model's first token (<bos>) where it has one. A model
without one (SmolLM2 reads the text as it is) is told by its labels' own marks ("▁" for a
space, escaped line breaks, "<0x..>" bytes) or by being the labels this process made last;
words typed by a person carry none of these.
"""

from __future__ import annotations

import collections
import re
import threading
from collections.abc import Callable, Sequence

from mha_explorer.core.errors import ConfigError
from mha_explorer.core.models.decoder.report import token_ids_of
from mha_explorer.core.models.decoder.tokenizer import SPACE, DecoderTokenizer, undisplay_piece
from mha_explorer.core.models.description import ModelDescription

VIEW_MAX_TOKENS = 1024  # a text the stage view computes every stage of (its maps are T × T)
_MARKS = (SPACE, "\\n", "\\t", "\\r", "<0x")  # in a byte-level label, never in a typed word
_BYTE = re.compile(r"<0x([0-9A-F]{2})>")
_REMEMBERED = 64  # label sequences made in this process, known as labels when they come back


class DecoderPieces:
    """``as_pieces``, ``detokenize`` and ``token_ids`` of one decoder."""

    def __init__(self, description: ModelDescription, tokenizer: Callable[[], DecoderTokenizer]):
        self.d = description
        self._tokenizer = tokenizer
        self._made: collections.OrderedDict[tuple[str, ...], None] = collections.OrderedDict()
        self._lock = threading.Lock()

    def owns(self, tokens: Sequence[str]) -> bool:
        """Whether ``tokens`` are already this model's labels, not words on their way to them."""
        if not tokens:
            return False
        if self.d.decoder.bos_id is not None:
            return tokens[0] == self.d.first_token
        with self._lock:
            if tuple(tokens) in self._made:
                return True
        return any(mark in token for token in tokens for mark in _MARKS)

    def detokenize(self, tokens: Sequence[str]) -> str:
        """The text behind ``tokens``: the model's own labels joined, or words joined by spaces."""
        if not self.owns(tokens):
            return " ".join(tokens)
        if self.d.decoder.pieces == "sentencepiece":
            return "".join(undisplay_piece(t) for t in tokens[1:]).replace(SPACE, " ").lstrip(" ")
        return _byte_level_text(tokens[1:] if self.d.decoder.bos_id is not None else tokens)

    def as_pieces(self, tokens: Sequence[str] | None) -> tuple[str, ...]:
        """``tokens`` (words, or the model's labels) as the model reads them, its first token
        first; the default text when there are none. ConfigError for an empty or too long text."""
        text = self.detokenize(tokens) if tokens else self.d.default_sentence
        if not text.strip():
            raise ConfigError("tokens", "the text is empty: type a few words")
        ids, pieces = self._tokenizer().encode(text)
        if len(ids) > VIEW_MAX_TOKENS:
            first = f" with {self.d.first_token}" if self.d.decoder.bos_id is not None else ""
            raise ConfigError("tokens", f"the text is {len(ids):,} tokens{first}; the stage view reads "
                              f"at most {VIEW_MAX_TOKENS:,}; shorten it")
        made = tuple(pieces)
        with self._lock:
            self._made[made] = None
            self._made.move_to_end(made)
            while len(self._made) > _REMEMBERED:
                self._made.popitem(last=False)
        return made

    def token_ids(self, pieces: Sequence[str]) -> list[int]:
        """The ids of the model's labels; ConfigError naming the first one it does not know."""
        return token_ids_of(self._tokenizer(), pieces, self.d.name)


def _byte_level_text(labels: Sequence[str]) -> str:
    """The text of byte-level labels: "▁" a space, escapes undone, "<0xHH>" bytes joined to the
    characters they are parts of."""
    data = bytearray()
    for label in labels:
        label = label.split("⟨", 1)[0] if label.endswith("⟩") else label  # a label made unique by its id
        at = 0
        for byte in _BYTE.finditer(label):
            data += undisplay_piece(label[at:byte.start()]).replace(SPACE, " ").encode("utf-8")
            data.append(int(byte.group(1), 16))
            at = byte.end()
        data += undisplay_piece(label[at:]).replace(SPACE, " ").encode("utf-8")
    return data.decode("utf-8", errors="replace")
