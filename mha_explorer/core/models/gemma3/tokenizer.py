"""Gemma 3's tokenizer, built from the vocabulary inside the GGUF file (no torch).

The file lists the 262,144 pieces of a SentencePiece BPE model (with their types:
normal, control, user-defined, byte) but no merge rules. SentencePiece adds the
pieces to its vocabulary in the order its training merged them, so the rules are
recovered from the order: every way to cut a piece into two known pieces is a
merge, ranked by the piece's id (for one piece, the cut with the longer left part
first). Text is read with spaces as "▁" and no splitting into words; a character
the vocabulary lacks falls back to its UTF-8 bytes (<0xE2> ...). Control pieces
(<bos>, <start_of_turn>, <unused0> ...) and user-defined ones (newline runs, tab
runs, HTML tags) are matched whole before anything else, except that the runs of
spaces, which the file spells with real spaces, are ordinary pieces spelled "▁▁"...
This gives the ids transformers' Gemma tokenizer gives for the same file (tested).

The built tokenizer is stored as tokenizer.json in the app's cache during the
conversion (``convert``); ``load_tokenizer`` checks its SHA-256 before using it.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from typing import Any

SPACE = "\u2581"  # "▁", how SentencePiece writes a space inside a piece
BOS_ID, EOS_ID, UNK_ID, PAD_ID = 2, 1, 3, 0
UNK = "<unk>"
# tokenizer.ggml.token_type values
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}

_lock = threading.Lock()
_loaded: dict[str, Any] = {}  # sha256 -> Tokenizer, those read and checked in this process


def _is_space_run(piece: str) -> bool:
    return " " in piece and not piece.strip(" ")


def vocabulary(pieces: Sequence[str]) -> list[str]:
    """The pieces as the BPE model looks them up: a run of spaces is spelled with "▁"."""
    return [SPACE * len(p) if _is_space_run(p) else p for p in pieces]


def merges(vocab: Sequence[str]) -> list[tuple[str, str]]:
    """Merge rules recovered from the vocabulary's order (see the module's docstring)."""
    known = set(vocab)
    rules = []
    for piece in vocab:
        for cut in range(len(piece) - 1, 0, -1):  # the longer left part first
            left, right = piece[:cut], piece[cut:]
            if left in known and right in known:
                rules.append((left, right))
    return rules


def build_tokenizer(pieces: Sequence[str], types: Sequence[int]) -> Any:
    """A ``tokenizers.Tokenizer`` for the GGUF's ``tokenizer.ggml.tokens`` and ``token_type``."""
    from tokenizers import AddedToken, Tokenizer, decoders, normalizers
    from tokenizers.models import BPE

    if len(pieces) != len(types):
        raise ValueError(f"{len(pieces)} pieces but {len(types)} piece types")
    vocab = vocabulary(pieces)
    ids = {piece: i for i, piece in enumerate(vocab)}
    if len(ids) != len(vocab):
        raise ValueError("the vocabulary spells two pieces alike")
    tok = Tokenizer(BPE(vocab=ids, merges=merges(vocab), unk_token=UNK, fuse_unk=True, byte_fallback=True))
    tok.normalizer = normalizers.Replace(" ", SPACE)
    # no pre-tokenizer: the text is one word, so pieces may span spaces ("▁▁" ...), as in SentencePiece
    tok.decoder = decoders.Sequence([decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.add_special_tokens([AddedToken(p, normalized=False, special=True)
                            for p, kind in zip(pieces, types, strict=True) if kind == CONTROL])
    tok.add_tokens([AddedToken(p, normalized=False, special=False)
                    for p, kind in zip(pieces, types, strict=True)
                    if kind == USER_DEFINED and not _is_space_run(p)])
    tok.no_padding()
    tok.no_truncation()
    return tok


def serialise(tok: Any) -> str:
    """The tokenizer as JSON text, merges written "left right" when no piece holds a space
    (a form ``tokenizers`` reads too, a fifth faster than pairs of strings)."""
    import json

    data = json.loads(tok.to_str())
    rules = data["model"]["merges"]
    if all(" " not in left and " " not in right for left, right in rules):
        data["model"]["merges"] = [f"{left} {right}" for left, right in rules]
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


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
