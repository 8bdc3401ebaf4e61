"""The configuration a person picks and the rules it must keep (no torch, no Qt)."""

from mha_explorer.core.config.record import (
    ALIGNMENTS,
    CAPS,
    DEVICES,
    DTYPES,
    FIELD_LABELS,
    ConfigError,
    MHAConfig,
    divisors,
    nearest,
    sentence_tokens,
    validate,
)

__all__ = ["ALIGNMENTS", "CAPS", "DEVICES", "DTYPES", "FIELD_LABELS", "ConfigError", "MHAConfig", "divisors",
           "nearest", "sentence_tokens", "validate"]
