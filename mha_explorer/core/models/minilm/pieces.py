"""Between words a person types and the word pieces the trained model reads (no torch).

The window's sentence field and the command line hand over words split at
spaces; a trained layer needs the tokenizer's pieces, [CLS] first and [SEP] last.
``detokenize`` turns pieces back into the sentence they came from, so a config's
tokens can be re-read whichever form they arrive in.
"""

from __future__ import annotations

from collections.abc import Sequence

from mha_explorer.core.models.minilm import info

CONTINUATION = "##"  # WordPiece's mark on a piece that continues the word before it


def detokenize(tokens: Sequence[str]) -> str:
    """The sentence behind ``tokens``: [CLS]/[SEP] dropped, "##" pieces joined to their word."""
    words: list[str] = []
    for token in tokens:
        if token in (info.CLS, info.SEP):
            continue
        if token.startswith(CONTINUATION) and len(token) > len(CONTINUATION) and words:
            words[-1] += token[len(CONTINUATION):]
        else:
            words.append(token)
    return " ".join(words)


def as_pieces(tokens: Sequence[str] | None) -> tuple[str, ...]:
    """``tokens`` as the model's word pieces (the default sentence when there are none);
    raises ConfigError for an empty or too long sentence, or without the extra."""
    from mha_explorer.core.models.minilm.tokenizer import sentence_pieces  # reads the extra's files

    return sentence_pieces(detokenize(tokens) if tokens else info.DEFAULT_SENTENCE)
