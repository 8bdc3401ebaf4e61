"""Gemma 3's tokenizer as the app uses it: the shared decoder's (``decoder.tokenizer``: read
from the converted copy, checked, ``encode(text, bos=True) -> (ids, pieces)`` and
``decode(ids) -> text``) over the tokenizer built from the GGUF's vocabulary (``vocab``)
(no torch). ``gemma_tokenizer`` gives it without loading the model.
"""

from __future__ import annotations

from mha_explorer.core.models.decoder.kit import kit_for
from mha_explorer.core.models.decoder.tokenizer import (
    DecoderTokenizer,
    TokenizerFileError,
    display_piece,
    load_tokenizer,
    undisplay_piece,
)
from mha_explorer.core.models.gemma3.description import GEMMA3_270M
from mha_explorer.core.models.progress import Cancel, Progress

__all__ = ["BOS_ID", "EOS_ID", "PAD_ID", "UNK_ID", "GemmaTokenizer", "TokenizerFileError", "display_piece",
           "gemma_tokenizer", "load_tokenizer", "undisplay_piece"]

BOS_ID, EOS_ID, UNK_ID, PAD_ID = GEMMA3_270M.decoder.bos_id, GEMMA3_270M.decoder.eos_id, 3, 0
GemmaTokenizer = DecoderTokenizer


def gemma_tokenizer(progress: Progress | None = None, cancel: Cancel | None = None) -> DecoderTokenizer:
    """Gemma's tokenizer alone, without the model's weights (the packages' file is converted
    first if it never was). GemmaFilesError (one line, with the fix) when the extra is missing;
    a tokenizer.json altered since the conversion is converted again."""
    return kit_for(GEMMA3_270M).tokenizer(progress, cancel)
