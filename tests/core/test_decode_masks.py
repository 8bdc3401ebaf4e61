"""Decoding honours the whole mask: a window, a stride, global tokens and their combinations
give exactly the rows of one full causal pass, and the cache keeps exactly the tokens
``shapes`` says it keeps."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mha_explorer import cli
from mha_explorer.core.config import MHAConfig
from mha_explorer.core.engine.decode import max_abs_diff_vs_full, run_decode
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.plan.decode import decode_config, decode_steps

MASKS = {
    "window 4": dict(window=4),
    "stride 2": dict(stride=2),
    "stride 3, window 6": dict(stride=3, window=6),
    "window 4, 2 global": dict(window=4, global_tokens=2),
    "stride 2, 1 global": dict(stride=2, global_tokens=1),
    "window 3, stride 2, 3 global": dict(window=3, stride=2, global_tokens=3),
}
FAMILIES = {
    "GQA": dict(d_model=32, n_heads=4, n_kv_heads=2),
    "MLA": dict(d_model=32, n_heads=4, mla=True, kv_lora_rank=16, qk_rope_head_dim=4, positions="rope"),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("mask", sorted(MASKS))
@pytest.mark.parametrize("prompt", [1, 5])
def test_every_step_equals_the_full_causal_pass(family, mask, prompt):
    cfg = MHAConfig(batch=2, **FAMILIES[family], **MASKS[mask])
    run = run_decode(cfg, prompt=prompt, steps=7)
    assert max_abs_diff_vs_full(run) < 1e-5
    # the full pass itself is masked: it is not the plain causal one when a stride is set
    if cfg.stride is not None:
        plain = run_decode(cfg.replace(stride=None, global_tokens=0), prompt=prompt, steps=7)
        pairs = zip(run.steps, plain.steps, strict=True)
        assert max(np.abs(a.output - b.output).max() for a, b in pairs) > 1e-3


@pytest.mark.parametrize("mask", sorted(MASKS))
def test_the_cache_keeps_what_shapes_says(mask):
    cfg = MHAConfig(d_model=32, n_heads=4, batch=1, **MASKS[mask])
    prompt, steps = 3, 9
    run = run_decode(cfg, prompt=prompt, steps=steps)
    plan_steps = decode_steps(cfg, prompt, steps)
    for step, planned in zip(run.steps, plan_steps, strict=True):
        assert len(step.cache_positions) == planned.cache_tokens
    # the last step's cache is what the shapes table says a sequence of that length keeps
    whole = decode_config(cfg, prompt, steps)
    assert len(run.steps[-1].cache_positions) == build_plan(whole).memory.kv_cache_tokens
    if cfg.window is not None and cfg.global_tokens:
        # a window with global tokens keeps the first tokens and the last W
        assert set(range(cfg.global_tokens)) <= set(run.steps[-1].cache_positions)


def test_the_decode_command_checks_stride_and_global_tokens(capsys):
    rc = cli.main(["decode", "--d-model", "32", "--heads", "4", "--prompt", "8", "--steps", "12",
                   "--check", "--json", "--stride", "2"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["max_abs_diff_vs_full"] < 1e-5
    rc = cli.main(["decode", "--d-model", "32", "--heads", "4", "--prompt", "8", "--steps", "12",
                   "--window", "4", "--global-tokens", "2", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["steps"][-1]["cache_tokens"] == 6  # W 4 + 2 global, as shapes counts
