"""The reference PyTorch implementation shown beside the diagram, for one config.

Each attention family writes its own listing (core/variants/*/code.py); this is the one
place the window, the export and the tests ask for it.
"""

from __future__ import annotations

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.variants.registry import family_of


def reference_code(cfg: MHAConfig) -> str:
    """The PyTorch source of ``attention(...)`` for this config, shape comments included."""
    return family_of(cfg).reference_code(cfg).text


def stage_lines(cfg: MHAConfig) -> dict[str, tuple[int, int]]:
    """Stage id -> (first, last) line of ``reference_code(cfg)``, 1-based and inclusive."""
    return dict(family_of(cfg).reference_code(cfg).ranges)
