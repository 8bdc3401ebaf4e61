"""The one way a config is edited: by the CLI's flags, the window's controls and the controller.

An edit is a dict of field values applied on top of a config and validated as a
whole, so a message is about the config the person ends up with, not about a
half-applied step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mha_explorer.core.config import MHAConfig


def merge_edits(pending: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """Edits typed earlier (not yet valid together) followed by newer ones; the newer win."""
    return {**pending, **changes}


def apply_edits(cfg: MHAConfig, changes: Mapping[str, Any]) -> MHAConfig:
    """``cfg`` with ``changes`` applied; raises ConfigError for an invalid result.

    A new length without new tokens drops a sentence of another length.
    """
    data = cfg.to_dict()
    data.update(changes)
    if "seq" in changes and "tokens" not in changes:
        data["tokens"] = None
    return MHAConfig.from_dict(data)
