"""The Qt-free floor: config, stage plan, presets, memory estimates and the torch engine.

Importing this package imports no torch; ``mha_explorer.core.engine`` does.
"""

from .config import ConfigError, MHAConfig
from .plan import STAGE_IDS, Plan, build_plan
from .presets import PRESETS, get_preset

__all__ = ["ConfigError", "MHAConfig", "STAGE_IDS", "Plan", "build_plan", "PRESETS", "get_preset"]
