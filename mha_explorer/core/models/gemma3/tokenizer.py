"""Gemma 3's tokenizer as the app uses it: read from the converted copy, checked, and
wrapped as ``encode(text, bos=True) -> (ids, pieces)`` and ``decode(ids) -> text`` (no torch).

How it is built from the GGUF's vocabulary is in ``vocab``; ``gemma_tokenizer`` gives
it without loading the model (converting the packages' file first if needed).
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Sequence
from typing import Any

from mha_explorer.core.models.progress import Cancel, Progress

BOS_ID, EOS_ID, UNK_ID, PAD_ID = 2, 1, 3, 0
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}

_lock = threading.Lock()
_loaded: dict[str, Any] = {}  # sha256 -> Tokenizer, those read and checked in this process


class TokenizerFileError(ValueError):
    """The cached tokenizer.json is not the one the conversion wrote."""


def load_tokenizer(path, sha256: str) -> Any:
    """The tokenizer stored at ``path``, once its SHA-256 equals ``sha256`` (kept per process)."""
    from tokenizers import Tokenizer

    with _lock:
        if sha256 in _loaded:
            return _loaded[sha256]
        with open(path, "rb") as handle:
            data = handle.read()
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha256:
            raise TokenizerFileError("its SHA-256 no longer matches the one recorded when it was written")
        tok = Tokenizer.from_str(data.decode("utf-8"))
        _loaded[sha256] = tok
        return tok


def display_piece(piece: str) -> str:
    """A piece as a label shows it: "▁" kept as the visible space, line breaks and tabs escaped."""
    return "".join(_ESCAPES.get(ch, ch) for ch in piece)


def undisplay_piece(label: str) -> str:
    """The piece behind a label (``display_piece`` undone)."""
    for raw, shown in _ESCAPES.items():
        label = label.replace(shown, raw)
    return label


class GemmaTokenizer:
    """``encode`` and ``decode`` over a loaded ``tokenizers.Tokenizer``."""

    def __init__(self, tok: Any):
        self.tok = tok

    def encode(self, text: str, bos: bool = True) -> tuple[list[int], list[str]]:
        """(ids, pieces for display); ``bos`` puts <bos> first, as the model was trained."""
        found = self.tok.encode(text, add_special_tokens=False)
        ids = ([BOS_ID] if bos else []) + list(found.ids)
        return ids, self.pieces(ids)

    def pieces(self, ids: Sequence[int]) -> list[str]:
        return [display_piece(self.tok.id_to_token(int(i))) for i in ids]

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
        return tuple(i for i in range(self.vocab_size)
                     if i not in added and not (self.tok.id_to_token(i) or "").startswith("<0x"))


def gemma_tokenizer(progress: Progress | None = None, cancel: Cancel | None = None) -> GemmaTokenizer:
    """Gemma's tokenizer alone, without the model's weights (the packages' file is converted
    first if it never was). GemmaFilesError (one line, with the fix) when the extra is missing;
    a tokenizer.json altered since the conversion is converted again."""
    from mha_explorer.core.models.gemma3 import convert, files

    ok, message = files.is_available()
    if not ok:
        raise files.GemmaFilesError(message)
    found = convert.prepare(progress, cancel)
    try:
        return GemmaTokenizer(load_tokenizer(found.tokenizer, found.tokenizer_sha256))
    except TokenizerFileError as err:
        found = convert.prepare(progress, cancel, rebuild=f"was altered ({files.TOKENIZER_FILE}: {err})")
        return GemmaTokenizer(load_tokenizer(found.tokenizer, found.tokenizer_sha256))
