"""Gemma 3 270M's numbers for the command line and the views: the shared decoder's report
(``decoder.report``, where the JSON is described) bound to Gemma."""

from __future__ import annotations

from mha_explorer.core.models.decoder.kit import kit_for
from mha_explorer.core.models.decoder.report import (
    DECODE_MAX_STEPS,
    DIGITS,
    HEADS_MAX_TOKENS,
    DecoderReport,
    TextMaps,
    grid_badges,
    head_rows,
)
from mha_explorer.core.models.gemma3.description import GEMMA3_270M
from mha_explorer.core.models.progress import Cancel, Progress

__all__ = ["DECODE_MAX_STEPS", "DIGITS", "HEADS_MAX_TOKENS", "TextMaps", "ablation_rows", "check_layer",
           "decode_report", "grid_badges", "head_rows", "heads_report", "induction_report", "pieces_maps",
           "text_maps"]

D = GEMMA3_270M


def _model(progress: Progress | None, cancel: Cancel | None):
    return kit_for(D).load_model(progress, cancel)  # the extra checked first


_REPORT = DecoderReport(D, lambda progress, cancel: _model(progress, cancel))
check_layer = _REPORT.check_layer
text_maps = _REPORT.text_maps
heads_report = _REPORT.heads_report
decode_report = _REPORT.decode_report
induction_report = _REPORT.induction_report
pieces_maps = _REPORT.pieces_maps
ablation_rows = _REPORT.ablation_rows
