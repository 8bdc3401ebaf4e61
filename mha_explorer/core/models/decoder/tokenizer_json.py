"""tokenizer.json written by the app itself, byte for byte the same every time (no torch).

A converted tokenizer is stored in the ``tokenizers`` library's JSON format, but written
here from the GGUF's vocabulary rather than by the library's own serialiser, whose output
changes between its versions: the same pieces and rules give the same bytes, so the
conversion's SHA-256 can be pinned. Keys come in the order the library writes them, so a
file the library wrote from the same tokenizer is the same file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AddedPiece:
    """A piece matched whole before the model splits the text (<bos>, <|im_start|>, ...)."""

    id: int
    content: str
    special: bool  # a control piece: skipped when decoding with skip_special_tokens


def bpe_tokenizer_json(vocab: Sequence[str], merges: Sequence[tuple[str, str]],
                       added: Sequence[AddedPiece], *, normalizer: dict[str, Any] | None,
                       pre_tokenizer: dict[str, Any] | None, decoder: dict[str, Any], unk: str | None,
                       byte_fallback: bool) -> bytes:
    """The JSON of a BPE tokenizer: ``vocab`` in id order, ``merges`` by rank, ``added`` pieces.

    Merges are written "left right" when no piece holds a space (a form every version of
    the library reads, and a fifth faster than pairs of strings), else as pairs."""
    spaced = any(" " in left or " " in right for left, right in merges)
    data = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": a.id, "content": a.content, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": a.special}
                         for a in sorted(added, key=lambda a: a.id)],
        "normalizer": normalizer, "pre_tokenizer": pre_tokenizer, "post_processor": None, "decoder": decoder,
        "model": {
            "type": "BPE", "dropout": None, "unk_token": unk, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": unk is not None, "byte_fallback": byte_fallback,
            "ignore_merges": False, "vocab": {piece: i for i, piece in enumerate(vocab)},
            "merges": ([list(rule) for rule in merges] if spaced
                       else [f"{left} {right}" for left, right in merges]),
        },
    }
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
