"""What the variants add to the stage plan, in the shapes build_plan can take over (no torch).

- ``stage_list``: the MHA stages with the positions step put in its place (sinusoidal after
  the input, RoPE after the transpose), or under latent attention MLA's own stages;
- ``params_for``: MLA's parameter terms instead of the four projections;
- ``kv_cache_figures``: the memory keys ``shapes --json`` keeps, with MLA's cache and the
  rolling window;
- ``mask_summary`` and ``mla_summary``: the counts the plan shows beside the stages.
"""

from __future__ import annotations

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.kv_cache import kv_cache_bytes
from mha_explorer.core.plan.positions import rope_stage, sinusoidal_stage
from mha_explorer.core.specs.mask_counts import cached_tokens, describe, mask_counts, skipped_flops
from mha_explorer.core.stages.records import ParamPlan, Stage
from mha_explorer.core.variants.latent.dims import mla_param_plan
from mha_explorer.core.variants.latent.stages import absorbed_weight_count, mla_absorbed_stages, mla_stages


def stage_list(cfg: MHAConfig, mha_stages: tuple[Stage, ...]) -> tuple[Stage, ...]:
    """The stages to show for ``cfg``, given the plain MHA/GQA/MQA ones."""
    if cfg.mla:
        latent = mla_stages(cfg)  # input first; positions added to X come right after it
        added = sinusoidal_stage(cfg)
        return latent if added is None else (latent[0], added, *latent[1:])
    out: list[Stage] = []
    for stage in mha_stages:
        out.append(stage)
        extra = {"input": sinusoidal_stage, "transpose": rope_stage}.get(stage.id)
        added = extra(cfg) if extra is not None else None
        if added is not None:
            out.append(added)
    return tuple(out)


def params_for(cfg: MHAConfig, mha_params: ParamPlan) -> ParamPlan:
    return mla_param_plan(cfg) if cfg.mla else mha_params


def kv_cache_figures(cfg: MHAConfig) -> dict[str, int]:
    per_token, per_sequence, batch = kv_cache_bytes(cfg)
    return {"kv_cache_per_token": per_token, "kv_cache_per_sequence": per_sequence,
            "kv_cache_batch": batch, "kv_cache_tokens": cached_tokens(cfg.mask_spec, cfg.S)}


def mask_summary(cfg: MHAConfig) -> dict:
    """Per head and batch element: cells, visible, masked; for the whole layer: skipped FLOPs."""
    counts = mask_counts(cfg.mask_spec, cfg.T, cfg.S)
    return {"description": describe(cfg.mask_spec), "cells": counts.cells, "visible": counts.visible,
            "masked": counts.masked, "empty_rows": counts.empty_rows,
            "visible_fraction": counts.visible_fraction, "skipped_flops": skipped_flops(cfg)}


def mla_summary(cfg: MHAConfig) -> dict | None:
    """Naive against absorbed: FLOPs of a forward pass and the absorbed stage list."""
    if not cfg.mla:
        return None
    naive, absorbed = mla_stages(cfg), mla_absorbed_stages(cfg)
    return {"naive_flops": sum(s.flops for s in naive), "absorbed_flops": sum(s.flops for s in absorbed),
            "absorbed_stages": [s.to_dict() for s in absorbed],
            "folded_output_weight": absorbed_weight_count(cfg)}
