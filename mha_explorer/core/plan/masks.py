"""What a mask saves and hides, for the plan's summary (no torch): visible cells, empty rows,
and the FLOPs a sparse kernel would not spend on masked cells."""

from __future__ import annotations

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.specs.mask_counts import describe, mask_counts
from mha_explorer.core.stages.catalog import StageId
from mha_explorer.core.stages.records import SOFTMAX_OPS_PER_ELEMENT
from mha_explorer.core.variants.registry import family_of


def mask_summary(cfg: MHAConfig) -> dict:
    """Per head and batch element: cells, visible, masked; for the whole layer: skipped FLOPs."""
    counts = mask_counts(cfg.mask_spec, cfg.T, cfg.S)
    return {"description": describe(cfg.mask_spec), "cells": counts.cells, "visible": counts.visible,
            "masked": counts.masked, "empty_rows": counts.empty_rows,
            "visible_fraction": counts.visible_fraction, "skipped_flops": skipped_flops(cfg)}


def skipped_flops(cfg: MHAConfig, qk_width: int | None = None, v_width: int | None = None) -> dict[str, int]:
    """FLOPs a sparse kernel would not spend on masked cells, per stage and in total.

    The dense plan counts per cell and head 2·qk_width + 1 (dot product and scale),
    5 (softmax) and 2·v_width (weighted sum); masked cells need none of them. The
    widths default to the config's own (its family's head widths).
    """
    own = family_of(cfg).widths(cfg)
    qk_width = own.qk if qk_width is None else qk_width
    v_width = own.v if v_width is None else v_width
    masked = mask_counts(cfg.mask_spec, cfg.T, cfg.S).masked * cfg.batch * cfg.H
    out = {
        StageId.scores: masked * (2 * qk_width + 1),
        StageId.softmax: masked * SOFTMAX_OPS_PER_ELEMENT,
        StageId.weighted_sum: masked * 2 * v_width,
    }
    out["total"] = sum(out.values())
    return out


