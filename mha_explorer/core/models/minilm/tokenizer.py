"""The model's WordPiece tokenizer, read from its tokenizer.json (no torch).

Padding and truncation are turned off: the app shows every piece of the
sentence, [CLS] first and [SEP] last, and a piece that continues a word keeps
its '##' mark ("untiring" -> "un", "##ti", "##ring").
"""

from __future__ import annotations

import threading
from typing import Any

from mha_explorer.core.errors import ConfigError
from mha_explorer.core.models import tokenizer_process
from mha_explorer.core.models.minilm import info
from mha_explorer.core.models.minilm.files import TrainedWeightsError, model_dir, read_verified
from mha_explorer.core.models.texts import ids_of_pieces

_lock = threading.Lock()
_tokenizer: Any = None


def load_tokenizer() -> Any:
    """The tokenizer: built in this process, or in the window's tokenizer process
    (``tokenizer_process``)."""
    return tokenizer_process.tokenizer(f"{__name__}:read_tokenizer")


def read_tokenizer() -> Any:
    """The ``tokenizers.Tokenizer``, built here once per process."""
    global _tokenizer
    with _lock:
        if _tokenizer is None:
            try:
                from tokenizers import Tokenizer
            except ImportError:
                raise TrainedWeightsError(f"{info.DISPLAY_NAME} needs the 'tokenizers' library; "
                                          f"install the optional extra: {info.INSTALL_HINT}") from None
            path = model_dir() / info.TOKENIZER_FILE
            data = read_verified(path, info.TOKENIZER_SHA256, "tokenizer")
            try:
                tok = Tokenizer.from_str(data.decode("utf-8"))
            except Exception:  # noqa: BLE001 - the pinned file parses; anything else is a broken install
                raise TrainedWeightsError(f"{path} could not be read as a tokenizer; reinstall: "
                                          f"{info.INSTALL_HINT}") from None
            tok.no_padding()
            tok.no_truncation()
            _tokenizer = tok
        return _tokenizer


def wordpieces(text: str) -> tuple[str, ...]:
    """The sentence as the model reads it: [CLS], its word pieces, [SEP]."""
    return tuple(load_tokenizer().encode(text).tokens)


def sentence_pieces(text: str) -> tuple[str, ...]:
    """``wordpieces`` for a sentence a person typed; ConfigError when it is empty or too long."""
    pieces = wordpieces(text)
    if len(pieces) <= 2:  # only [CLS] and [SEP]: nothing was typed that the model reads
        raise ConfigError("tokens", "the sentence is empty: type a few words")
    if len(pieces) > info.MAX_TOKENS:
        raise ConfigError("tokens", f"the sentence has {len(pieces)} word pieces; MiniLM-L6 reads at "
                          f"most {info.MAX_TOKENS}; shorten it")
    return pieces


def token_ids(pieces: tuple[str, ...] | list[str]) -> list[int]:
    """Vocabulary ids of word pieces; ConfigError naming the first piece the model does not know."""
    return ids_of_pieces(load_tokenizer().token_to_id, pieces, "MiniLM-L6's word pieces; type the "
                         "sentence so it is split by the model's tokenizer")
