"""A GPT-2 style byte-level BPE tokenizer from the vocabulary and merges inside a GGUF file
(``tokenizer.ggml.model`` "gpt2"; no torch).

The file lists every piece (each byte spelled as one printable character, "Ġ" for a space),
its type (normal, control ...) and the merge rules in rank order. The text is split as
GPT-2 splits it (ByteLevel with its regular expression, no space put in front), then merged
by rank; control pieces (<|im_start|> ...) are matched whole first. This is the tokenizer
transformers builds from the same file (tested).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mha_explorer.core.models.decoder.tokenizer_json import AddedPiece, bpe_tokenizer_json
from mha_explorer.core.models.progress import Cancel, Progress

CONTROL, USER_DEFINED = 3, 4  # tokenizer.ggml.token_type values of pieces matched whole
_BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}


def byte_level_tokenizer_json(meta: Mapping[str, Any], cancel: Cancel | None = None,
                              progress: Progress | None = None) -> bytes:
    """tokenizer.json for the GGUF's ``tokenizer.ggml.tokens``, ``token_type`` and ``merges``."""
    pieces, types = meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.token_type"]
    if len(pieces) != len(types):
        raise ValueError(f"{len(pieces)} pieces but {len(types)} piece types")
    if len(set(pieces)) != len(pieces):
        raise ValueError("the vocabulary spells two pieces alike")
    rules = []
    for rule in meta["tokenizer.ggml.merges"]:
        parts = rule.split(" ")
        if len(parts) != 2:  # a byte-level piece never holds a space ("Ġ" stands for it)
            raise ValueError(f"the merge rule {rule!r} is not two pieces")
        rules.append((parts[0], parts[1]))
    kinds = enumerate(zip(pieces, types, strict=True))
    added = [AddedPiece(i, piece, kind == CONTROL) for i, (piece, kind) in kinds
             if kind in (CONTROL, USER_DEFINED)]
    if progress is not None:
        progress(1.0, "storing the tokenizer")
    return bpe_tokenizer_json(pieces, rules, added, normalizer=None, pre_tokenizer=_BYTE_LEVEL,
                              decoder={**_BYTE_LEVEL, "add_prefix_space": True}, unk=None,
                              byte_fallback=False)
