"""Between the words a person types and Gemma 3's own tokens (no torch): the shared decoder's
(``decoder.pieces``), <bos> first and "▁" for a space."""

from __future__ import annotations

from mha_explorer.core.models.decoder.kit import kit_for
from mha_explorer.core.models.decoder.pieces import VIEW_MAX_TOKENS
from mha_explorer.core.models.gemma3.description import GEMMA3_270M

__all__ = ["FIRST", "VIEW_MAX_TOKENS", "as_pieces", "detokenize", "token_ids"]

FIRST = GEMMA3_270M.first_token
_PIECES = kit_for(GEMMA3_270M).pieces
as_pieces = _PIECES.as_pieces
detokenize = _PIECES.detokenize
token_ids = _PIECES.token_ids
