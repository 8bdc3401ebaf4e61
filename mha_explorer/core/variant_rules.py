"""The rules that tie the variant fields (latent attention, masks, positions) to the rest
of the config, in one call for config validation.

Imported lazily from config._check (these modules import config themselves).
"""

from __future__ import annotations

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.mask_plan import check_mask
from mha_explorer.core.mla_plan import check_mla
from mha_explorer.core.positions import check_positions


def check_variants(cfg: MHAConfig) -> None:
    """ConfigError for the first broken rule: latent attention, then the mask, then positions."""
    check_mla(cfg)
    check_mask(cfg)
    check_positions(cfg)
