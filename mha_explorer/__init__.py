"""MHA Explorer: multi-head attention, stage by stage, with live shapes."""

__version__ = "0.1.0"
