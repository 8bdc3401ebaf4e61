"""The stage plan: every stage's shapes, strides, FLOPs and bytes as plain integers.

Computed from the config alone, without importing torch, so the shapes table
and ``mha-explorer shapes`` answer instantly even for sizes nobody could run.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.masks import mask_summary
from mha_explorer.core.specs.mask_counts import cached_tokens
from mha_explorer.core.stages.records import ParamPlan, Stage
from mha_explorer.core.variants.family import AttentionFamily
from mha_explorer.core.variants.registry import family_of, plan_summaries


@dataclass(frozen=True)
class MemoryPlan:
    kv_cache_per_token: int  # K and V for one token, one layer
    kv_cache_per_sequence: int  # x S, or x min(S, W) under a sliding window (a rolling cache)
    kv_cache_batch: int  # x B
    attention_matrix: int  # B·H·T·S elements at the dtype: the quadratic term
    weights: int
    activations: int  # everything the stages allocate
    kv_cache_tokens: int = 0  # tokens cached per sequence: S, or min(S, W (+ globals))

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Plan:
    config: MHAConfig
    stages: tuple[Stage, ...]
    params: ParamPlan
    memory: MemoryPlan
    dims: dict[str, int] = field(default_factory=dict)  # symbol -> size

    @property
    def total_flops(self) -> int:
        return sum(s.flops for s in self.stages)

    @property
    def stage_ids(self) -> tuple[str, ...]:
        """The stages of this config in order, as its attention family lists them."""
        return tuple(s.id for s in self.stages)

    def stage(self, stage_id: str) -> Stage:
        for s in self.stages:
            if s.id == stage_id:
                return s
        raise KeyError(f"no stage {stage_id!r} in this plan; it has {', '.join(self.stage_ids)}")

    def has_stage(self, stage_id: str) -> bool:
        return any(s.id == stage_id for s in self.stages)

    @property
    def family(self) -> AttentionFamily:
        return family_of(self.config)

    def to_dict(self) -> dict:
        c = self.config
        return {
            "config": c.to_dict(), "variant": c.variant, "dims": dict(self.dims),
            "stages": [s.to_dict() for s in self.stages], "params": self.params.to_dict(),
            "memory": self.memory.to_dict(), "total_flops": self.total_flops,
            "mask": mask_summary(c), **plan_summaries(c),
        }


@functools.lru_cache(maxsize=16)
def build_plan(cfg: MHAConfig) -> Plan:
    """The plan of a config (cached: the engine, the guard and the tables all ask for it)."""
    family = family_of(cfg)
    stages = family.stages(cfg)
    params = family.params(cfg)
    B, T, S, e = cfg.batch, cfg.T, cfg.S, cfg.elem_bytes
    per_token = family.cache(cfg).elements_per_token * e
    tokens = cached_tokens(cfg.mask_spec, S)  # S, or a rolling window's (+ global) tokens
    memory = MemoryPlan(
        kv_cache_per_token=per_token,
        kv_cache_per_sequence=per_token * tokens,
        kv_cache_batch=per_token * tokens * B,
        attention_matrix=B * cfg.H * T * S * e,
        weights=params.total * e,
        activations=sum(s.bytes for s in stages),
        kv_cache_tokens=tokens,
    )
    dims = {"B": B, "T": T, "S": S, "D": cfg.d_model, "H": cfg.H, "Hkv": cfg.Hkv, "d_k": cfg.d_k,
            "Hkv·d_k": cfg.kv_dim, **family.dims(cfg)}
    return Plan(cfg, stages, params, memory, dims)
