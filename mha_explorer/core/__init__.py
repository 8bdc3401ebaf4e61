"""The Qt-free floor: config, stage plan, presets, memory estimates and the torch engine.

Importing this package imports no torch; ``mha_explorer.core.engine.runner`` does.
"""

from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.config.presets import PRESETS, get_preset
from mha_explorer.core.plan.build import Plan, build_plan
from mha_explorer.core.stages.catalog import STAGE_IDS

__all__ = ["ConfigError", "MHAConfig", "STAGE_IDS", "Plan", "build_plan", "PRESETS", "get_preset"]
