"""The RMSNorm's epsilon where no trained model gives its own (no torch)."""

from __future__ import annotations

RMS_EPS = 1e-6  # what Gemma 3 and DeepSeek use; a trained model's config carries its own (norm_eps)
