"""Gemma 3's tokenizer built from the vocabulary inside the GGUF file (no torch).

The file lists the 262,144 pieces of a SentencePiece BPE model (with their types:
normal, control, user-defined, byte) but no merge rules. SentencePiece adds the
pieces to its vocabulary in the order its training merged them, so the rules are
recovered from the order: every way to cut a piece into two known pieces is a
merge, ranked by the piece's id (for one piece, the cut with the longer left part
first). Text is read with spaces as "▁" and no splitting into words; a character
the vocabulary lacks falls back to its UTF-8 bytes (<0xE2> ...). Control pieces
(<bos>, <start_of_turn>, <unused0> ...) and user-defined ones (newline runs, tab
runs, HTML tags) are matched whole before anything else, except the runs of
spaces, which the file spells with real spaces: they are ordinary pieces spelled
"▁▁", "▁▁▁" ... This gives the ids transformers' Gemma tokenizer gives for the same
file (tested).

The conversion (``convert``) writes it once as tokenizer.json (``tokenizer_json``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mha_explorer.core.models.decoder.tokenizer_json import AddedPiece, bpe_tokenizer_json
from mha_explorer.core.models.progress import Cancel, Progress, stop_if_asked

SPACE = "\u2581"  # "▁", how SentencePiece writes a space inside a piece
UNK = "<unk>"
# tokenizer.ggml.token_type values
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def _is_space_run(piece: str) -> bool:
    return " " in piece and not piece.strip(" ")


def vocabulary(pieces: Sequence[str]) -> list[str]:
    """The pieces as the BPE model looks them up: a run of spaces is spelled with "▁"."""
    return [SPACE * len(p) if _is_space_run(p) else p for p in pieces]


def merges(vocab: Sequence[str], cancel: Cancel | None = None,
           progress: Progress | None = None) -> list[tuple[str, str]]:
    """Merge rules recovered from the vocabulary's order (see the module's docstring)."""
    known = set(vocab)
    rules = []
    for index, piece in enumerate(vocab):
        if index % 16384 == 0:
            stop_if_asked(cancel)
            if progress is not None:
                progress(index / len(vocab), f"building the tokenizer: piece {index:,} of {len(vocab):,}")
        for cut in range(len(piece) - 1, 0, -1):  # the longer left part first
            left, right = piece[:cut], piece[cut:]
            if left in known and right in known:
                rules.append((left, right))
    return rules


def tokenizer_json(meta: Mapping[str, Any], cancel: Cancel | None = None,
                   progress: Progress | None = None) -> bytes:
    """tokenizer.json for the GGUF's ``tokenizer.ggml.tokens`` and ``token_type``."""
    pieces, types = meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.token_type"]
    if len(pieces) != len(types):
        raise ValueError(f"{len(pieces)} pieces but {len(types)} piece types")
    vocab = vocabulary(pieces)
    if len(set(vocab)) != len(vocab):
        raise ValueError("the vocabulary spells two pieces alike")
    rules = merges(vocab, cancel, progress)
    # control pieces are matched whole before anything else, and so are the user-defined ones
    # but the runs of spaces, which are ordinary pieces spelled "▁▁" ...
    added = [AddedPiece(i, p, kind == CONTROL) for i, (p, kind) in enumerate(zip(pieces, types, strict=True))
             if kind == CONTROL or (kind == USER_DEFINED and not _is_space_run(p))]
    if progress is not None:
        progress(1.0, "storing the tokenizer")
    return bpe_tokenizer_json(
        vocab, rules, added, unk=UNK, byte_fallback=True,
        normalizer={"type": "Replace", "pattern": {"String": " "}, "content": SPACE},
        # no pre-tokenizer: the text is one word, so pieces may span spaces ("▁▁" ...)
        pre_tokenizer=None,
        decoder={"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SPACE}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}]})
