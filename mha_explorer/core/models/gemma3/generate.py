"""Gemma 3 270M's greedy generation with its real KV cache: the shared decoder's
(``decoder.generate``), ending at Gemma's end of text (<eos>)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mha_explorer.core.models.decoder.generate import MAX_STEPS, Generation, GenerationStep, StepAttention
from mha_explorer.core.models.decoder.generate import generate as _generate
from mha_explorer.core.models.decoder.model import DecoderModel
from mha_explorer.core.models.gemma3.tokenizer import EOS_ID
from mha_explorer.core.models.progress import Cancel

__all__ = ["EOS_ID", "MAX_STEPS", "Generation", "GenerationStep", "StepAttention", "generate"]


def generate(model: DecoderModel, prompt_ids: Sequence[int], steps: int, *,
             attention: int | str | Sequence[int] | None = None,
             on_step: Callable[[GenerationStep], None] | None = None,
             cancel: Cancel | None = None, stop_at_eos: bool = True) -> Generation:
    """Greedy continuation of ``prompt_ids`` (which should start with <bos>) by ``steps``
    tokens; see ``decoder.generate.generate``."""
    return _generate(model, prompt_ids, steps, attention=attention, on_step=on_step, cancel=cancel,
                     stop_at_eos=stop_at_eos, eos_id=EOS_ID)
