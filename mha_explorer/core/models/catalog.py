"""The trained models the app knows, by the key the config and the command line use (no torch).

Adding a model means writing its package (description, files, tokenizer, forward pass, weight
source) and naming its description here; the Weights menu, the config's rules, the Layers
dock and the ``heads`` and ``decode`` commands read this catalog.
"""

from __future__ import annotations

from mha_explorer.core.models.description import ModelDescription
from mha_explorer.core.models.gemma3.description import GEMMA3_270M
from mha_explorer.core.models.minilm.description import MINILM_L6
from mha_explorer.core.models.smollm2.description import SMOLLM2_135M

MODELS: dict[str, ModelDescription] = {m.key: m for m in (MINILM_L6, GEMMA3_270M, SMOLLM2_135M)}


def model_named(key: str) -> ModelDescription | None:
    return MODELS.get(key)
