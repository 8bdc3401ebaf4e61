"""The Qt-free floor: config, stage plan, presets, memory estimates and the torch engine.

Importing this package imports no torch; ``mha_explorer.core.engine`` does.
"""

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.plan import STAGE_IDS, Plan, build_plan
from mha_explorer.core.presets import PRESETS, get_preset

__all__ = ["ConfigError", "MHAConfig", "STAGE_IDS", "Plan", "build_plan", "PRESETS", "get_preset"]
