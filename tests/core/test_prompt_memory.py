"""A decoder's prompt is checked against the memory budget before its pass.

Reading a prompt at once holds every head's T × T maps: 8,000 tokens of Gemma 3 270M
took 6.7 GB and 24,000 were killed past 22 GB. The estimate comes from the model's
description alone, so every trained decoder has it; a prompt over the budget is one
line naming its length, the memory and the longest prompt that fits, before the pass
allocates anything. The measured peaks are in benchmarks/bench_prompt_memory.py."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mha_explorer.core.errors import ConfigError
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.gemma3 import files
from mha_explorer.core.models.prompt_memory import check_prompt, longest_prompt, prompt_bytes

DECODERS = [m for m in MODELS.values() if m.causal]


@pytest.mark.parametrize("model", DECODERS, ids=lambda m: m.key)
def test_the_estimate_grows_with_the_square_of_the_prompt(model):
    sizes = [prompt_bytes(model, t) for t in (1_000, 2_000, 4_000)]
    maps = [model.heads * t * t * 4 for t in (1_000, 2_000, 4_000)]  # one float T × T map per head
    assert all(size > m for size, m in zip(sizes, maps, strict=True))
    assert (sizes[2] - sizes[1]) > 3 * (sizes[1] - sizes[0]) * 0.9  # quadratic, not linear


@pytest.mark.parametrize("model", DECODERS, ids=lambda m: m.key)
@pytest.mark.parametrize("budget", [64 << 20, 1 << 30, 12 << 30])
def test_the_longest_prompt_said_to_fit_is_the_longest_that_fits(model, budget):
    fit = longest_prompt(model, budget, steps=8)
    assert fit > 0 and prompt_bytes(model, fit, 8) <= budget < prompt_bytes(model, fit + 1, 8)
    check_prompt(model, fit, 8, budget)
    with pytest.raises(ConfigError) as refused:
        check_prompt(model, fit + 1, 8, budget)
    message = refused.value.message
    assert "\n" not in message and f"{fit + 1:,} tokens" in message and f"at most {fit:,}" in message


@pytest.mark.skipif(not files.is_available()[0], reason=files.is_available()[1])
def test_decode_refuses_a_prompt_over_the_budget_in_one_line_without_its_pass(tmp_path):
    words = " ".join(["the cat sat on the mat and looked at the dog"] * 60)  # about 600 tokens
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "MHA_EXPLORER_MEMORY_BUDGET": "64M",
           "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "mha_explorer", "decode", "--weights", "gemma3-270m",
                           "--text", words, "--steps", "2"], capture_output=True, timeout=300, env=env)
    assert done.returncode == 2 and done.stdout == b"", done.stderr
    line = done.stderr.decode()
    assert line.count("\n") == 1 and "tokens" in line and "memory budget of 64.0 MiB" in line, line
    assert "shorten it to at most" in line
