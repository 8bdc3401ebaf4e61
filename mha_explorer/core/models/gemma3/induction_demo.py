"""The repeated-random-tokens demonstration of induction heads, for Gemma 3 270M: the shared
decoder's (``decoder.induction_demo``)."""

from __future__ import annotations

from mha_explorer.core.models.decoder.induction_demo import (
    MAX_REPEAT,
    RepeatDemo,
    repeat_demo,
    repeated_random_tokens,
)

__all__ = ["MAX_REPEAT", "RepeatDemo", "repeat_demo", "repeated_random_tokens"]
