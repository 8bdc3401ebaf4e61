"""The rules that tie the variant fields (latent attention, masks, positions) to the rest
of the config, in one call for config validation.

Imported lazily from config._check (these modules import config themselves).
"""

from __future__ import annotations

from mha_explorer.core.config import ConfigError, MHAConfig, nearest
from mha_explorer.core.variants.latent.dims import check_mla


def check_variants(cfg: MHAConfig) -> None:
    """ConfigError for the first broken rule: latent attention, then the mask, then positions."""
    check_mla(cfg)
    check_mask(cfg)
    check_positions(cfg)


def check_mask(cfg: MHAConfig) -> None:
    """Rules tying the mask fields to the sequence; ConfigError on the first problem."""
    spec = cfg.mask_spec
    longest = max(cfg.T, cfg.S)
    if spec.global_tokens > longest:
        raise ConfigError(
            "global_tokens", f"{spec.global_tokens} global tokens is more than the {longest} tokens "
            f"in the sequence; try {longest} or fewer", [{"global_tokens": longest}],
        )
    if spec.global_tokens and not spec.sparse:
        raise ConfigError(
            "global_tokens", "global tokens only widen a sliding window or a stride, and neither is "
            "set; set a window, or clear the global tokens",
            [{"global_tokens": 0}, {"window": max(1, cfg.S // 4)}],
        )


def check_positions(cfg: MHAConfig) -> None:
    """RoPE turns pairs of numbers, so it needs an even head width (MLA checks its own)."""
    if cfg.positions != "rope" or cfg.mla or cfg.d_k % 2 == 0:
        return
    D, H = cfg.d_model, cfg.n_heads
    heads = [h for h in range(1, min(D, 1024) + 1) if D % h == 0 and (D // h) % 2 == 0]
    fixes = nearest(heads, H)
    raise ConfigError(
        "positions", f"RoPE turns pairs of numbers but each head has d_k = {cfg.d_k}, an odd width; "
        + (f"try {' or '.join(map(str, fixes))} heads, or " if fixes else "try ")
        + "sinusoidal positions",
        [{"n_heads": h} for h in fixes] + [{"positions": "sinusoidal"}],
    )
