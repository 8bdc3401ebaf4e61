"""A decoder's tokenizer as the app uses it: read from the converted copy, checked, and
wrapped as ``encode(text, bos=True) -> (ids, labels)`` and ``decode(ids) -> text`` (no torch).

A label is how a piece is shown on a map's axis, and it leads back to its piece:

- SentencePiece pieces (Gemma 3) already spell a space "▁" and a lone byte "<0xE2>"; line
  breaks and tabs are escaped ("\\n").
- Byte-level pieces (GPT-2 style BPE, SmolLM2) spell each byte as one character ("Ġ" for a
  space); a label shows the bytes' text instead, with "▁" for a space, the same escapes,
  and "<0xE2>" for the bytes of a character the piece holds only part of. Labels are looked
  up in a table of the whole vocabulary, made unique when it is built.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
from collections.abc import Sequence
from typing import Any

from mha_explorer.core.models.description import DecoderLayout

SPACE = "\u2581"  # "▁": a space, as labels show it
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}

_lock = threading.Lock()
# (SHA-256, path, inode, size, mtime) -> Tokenizer: those read and checked in this process; a file
# changed since it was read is read (and hashed) again
_loaded: dict[tuple, Any] = {}


class TokenizerFileError(ValueError):
    """The cached tokenizer.json is not the one the conversion wrote."""


def load_tokenizer(path, sha256: str) -> Any:
    """The tokenizer stored at ``path``, once its SHA-256 equals ``sha256`` (kept per process)."""
    from tokenizers import Tokenizer

    with _lock:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            key = (sha256, str(path), info.st_ino, info.st_size, info.st_mtime_ns)
            if key in _loaded:
                return _loaded[key]
            data = handle.read()
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha256:
            raise TokenizerFileError("its SHA-256 no longer matches the one recorded when it was written")
        tok = Tokenizer.from_str(data.decode("utf-8"))
        _loaded[key] = tok
        return tok


def display_piece(piece: str) -> str:
    """A SentencePiece piece as a label shows it: "▁" kept, line breaks and tabs escaped."""
    return "".join(_ESCAPES.get(ch, ch) for ch in piece)


def undisplay_piece(label: str) -> str:
    """The piece behind a label (``display_piece`` undone)."""
    for raw, shown in _ESCAPES.items():
        label = label.replace(shown, raw)
    return label


@functools.cache
def _byte_of_char() -> dict[str, int]:
    """GPT-2's byte-level alphabet: each byte as one printable character. The printable bytes
    stand for themselves; the others (space, controls, ...) take the characters from U+0100
    on, in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {**{chr(b): b for b in printable}, **{chr(256 + n): b for n, b in enumerate(others)}}


def byte_level_label(piece: str) -> str:
    """A byte-level piece as a label: its bytes' text, "▁" for a space, escapes, and "<0xHH>"
    for each byte of a character the piece holds only part of."""
    byte_of = _byte_of_char()
    text = bytes(byte_of[ch] for ch in piece).decode("utf-8", errors="surrogateescape")
    return "".join(f"<0x{ord(ch) - 0xDC00:02X}>" if 0xDC80 <= ord(ch) <= 0xDCFF  # a byte that is no character
                   else SPACE if ch == " " else _ESCAPES.get(ch, ch) for ch in text)


class DecoderTokenizer:
    """``encode`` and ``decode`` over a loaded ``tokenizers.Tokenizer``, with labels."""

    def __init__(self, tok: Any, layout: DecoderLayout):
        self.tok = tok
        self.layout = layout

    @functools.cached_property
    def _labels(self) -> list[str]:
        """Every id's label (byte-level pieces), unique: a label two pieces share would lead
        back to one of them only, so the later one carries its id."""
        added = self.tok.get_added_tokens_decoder()
        labels, seen = [], set()
        for i in range(self.vocab_size):
            piece = self.tok.id_to_token(i)
            label = piece if i in added else byte_level_label(piece)
            if label in seen:
                label = f"{label}⟨{i}⟩"
            seen.add(label)
            labels.append(label)
        return labels

    @functools.cached_property
    def _ids_of_labels(self) -> dict[str, int]:
        return {label: i for i, label in enumerate(self._labels)}

    def label(self, token_id: int) -> str:
        if self.layout.pieces == "byte_level":
            return self._labels[int(token_id)]
        return display_piece(self.tok.id_to_token(int(token_id)))

    def token_id(self, label: str) -> int | None:
        """The id a label stands for; None for a label of no piece."""
        if self.layout.pieces == "byte_level":
            return self._ids_of_labels.get(label)
        return self.tok.token_to_id(undisplay_piece(label))

    def encode(self, text: str, bos: bool = True) -> tuple[list[int], list[str]]:
        """(ids, labels); ``bos`` puts the model's first token first, as it was trained (a model
        without one reads the text as it is)."""
        found = self.tok.encode(text, add_special_tokens=False)
        first = [self.layout.bos_id] if bos and self.layout.bos_id is not None else []
        ids = first + list(found.ids)
        return ids, self.pieces(ids)

    def pieces(self, ids: Sequence[int]) -> list[str]:
        return [self.label(i) for i in ids]

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids``; control pieces such as <bos> are written out."""
        return self.tok.decode([int(i) for i in ids], skip_special_tokens=False)

    def token_text(self, token_id: int) -> str:
        """One token's own text (a lone byte of a longer character shows as "�")."""
        return self.decode([token_id])

    @property
    def vocab_size(self) -> int:
        return self.tok.get_vocab_size(with_added_tokens=True)

    @functools.cached_property
    def ordinary_ids(self) -> tuple[int, ...]:
        """Ids of ordinary pieces: not control, not user-defined, not a lone byte."""
        added = set(self.tok.get_added_tokens_decoder())
        if self.layout.pieces == "byte_level":  # a piece of part of a character shows its bytes
            return tuple(i for i in range(self.vocab_size) if i not in added and "<0x" not in self._labels[i])
        return tuple(i for i in range(self.vocab_size)
                     if i not in added and not (self.tok.id_to_token(i) or "").startswith("<0x"))
