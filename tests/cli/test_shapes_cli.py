"""`mha-explorer shapes`: the table, the JSON, the help, and one-line errors.

Most cases call ``main([...])`` in this process (fast); a few go through a real
``python -m mha_explorer`` to check what only a process shows: the exit code,
stderr as a person sees it, and that torch is never imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mha_explorer.cli import build_parser, main
from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.presets import PRESETS
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.stages.catalog import STAGE_IDS

CONFIG_FLAGS = {
    "--preset", "--d-model", "--heads", "--kv-heads", "--batch", "--seq", "--kv-seq",
    "--sentence", "--causal", "--no-causal", "--causal-alignment", "--bias", "--no-bias",
    "--dtype", "--device", "--seed",
    "--attention", "--kv-lora-rank", "--q-lora-rank", "--qk-nope-dim", "--qk-rope-dim", "--v-head-dim",
    "--window", "--stride", "--global-tokens", "--positions",
}


def shapes(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(["shapes", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def shapes_json(capsys, *args: str) -> dict:
    rc, out, err = shapes(capsys, *args, "--json")
    assert rc == 0 and err == ""
    return json.loads(out)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mha_explorer", *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "100"})


# --- JSON ------------------------------------------------------------------

# flags -> the config they must describe, written out independently of the CLI
CASES = [
    ((), MHAConfig()),
    (("--d-model", "64", "--heads", "8", "--kv-heads", "2", "--batch", "3", "--seq", "5",
      "--kv-seq", "7", "--no-bias", "--dtype", "bfloat16"),
     MHAConfig(d_model=64, n_heads=8, n_kv_heads=2, batch=3, seq=5, kv_seq=7, bias=False,
               dtype="bfloat16")),
    (("--preset", "llama2-70b", "--seq", "16", "--causal-alignment", "bottom-right"),
     MHAConfig(d_model=8192, n_heads=64, n_kv_heads=8, seq=16, bias=False, causal=True,
               causal_alignment="bottom-right", positions="rope",
               dtype="float16")),  # as LLaMA-2's weights are stored
    (("--sentence", "the cat sat on the mat", "--heads", "4", "--d-model", "1_024"),
     MHAConfig(d_model=1024, n_heads=4, seq=6, tokens=("the", "cat", "sat", "on", "the", "mat"))),
]


@pytest.mark.parametrize("args,cfg", CASES)
def test_json_matches_the_plan(capsys, args, cfg):
    data = shapes_json(capsys, *args)
    plan = build_plan(cfg)
    assert data["config"] == cfg.to_dict()
    assert [s["id"] for s in data["stages"]] == list(plan.stage_ids)
    for s in data["stages"]:
        stage = plan.stage(s["id"])
        assert (s["flops"], s["bytes"]) == (stage.flops, stage.bytes)
        assert [t["name"] for t in s["tensors"]] == [t.name for t in stage.tensors]
        for t in s["tensors"]:
            spec = stage.tensor(t["name"])
            assert tuple(t["shape"]) == spec.shape and tuple(t["dims"]) == spec.dims
    assert data["params"]["total"] == plan.params.total
    assert data["params"]["W_Q"] == cfg.d_model**2


def test_json_numbers_worked_example(capsys):
    # D=64, H=8, Hkv=2, d_k=8, B=1, T=S=4, no bias: K/V are 2·8 = 16 wide
    data = shapes_json(capsys, "--d-model", "64", "--heads", "8", "--kv-heads", "2",
                       "--batch", "1", "--seq", "4", "--no-bias")
    stage = {s["id"]: s for s in data["stages"]}
    k = {t["name"]: t for t in stage["transpose"]["tensors"]}["K"]
    assert (k["shape"], k["dims"]) == ([1, 2, 4, 8], ["B", "Hkv", "S", "d_k"])
    assert stage["scores"]["flops"] == 2 * 8 * 4 * 4 * 8 + 8 * 4 * 4  # 2·B·H·T·S·d_k + B·H·T·S
    # 2·64² + 2·64·16 = 8192 + 2048
    assert data["params"]["total"] == 10_240 and data["params"]["mha_total"] == 4 * 64**2


def test_flags_before_the_command_are_kept(capsys):
    rc = main(["--d-model", "64", "--heads", "4", "shapes", "--seq", "3", "--json"])
    cfg = json.loads(capsys.readouterr().out)["config"]
    assert rc == 0 and (cfg["d_model"], cfg["n_heads"], cfg["seq"]) == (64, 4, 3)


# --- table -----------------------------------------------------------------

def test_table_is_readable(capsys):
    rc, out, err = shapes(capsys, "--d-model", "64", "--heads", "4", "--seq", "3", "--batch", "2")
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("MHA Explorer — MHA: D=64  H=4  Hkv=4  d_k=16  B=2  T=3  S=3")
    numbered = [line.split()[:2] for line in lines if line[:1].isdigit() and line.split()[0].isdigit()]
    assert [int(n) for n, _ in numbered] == list(range(1, len(STAGE_IDS) + 1))  # one group per stage
    transpose = next(line for line in lines if line.startswith("4 transpose"))
    assert "B, H, T, d_k" in transpose and "2 × 4 × 3 × 16" in transpose
    assert "no (view)" in transpose and "view, no copy" in transpose
    assert "total = 4·D² + 4·D = 16,640" in out  # 4·64² + 4·64 = 16,384 + 256
    assert "the same: heads split D" in out


def test_gqa_table_shows_the_saving(capsys):
    rc, out, _ = shapes(capsys, "--preset", "llama3-8b")
    # full MHA 4·4096² = 67,108,864 minus GQA 41,943,040
    assert rc == 0 and "GQA saves 25,165,824" in out


def test_list_presets_names_every_preset(capsys):
    rc, out, _ = shapes(capsys, "--list-presets")
    keys = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert rc == 0 and keys == list(PRESETS)
    assert "604,028,928" in out  # GPT-3's count appears on its line


# --- help ------------------------------------------------------------------

@pytest.mark.parametrize("args,flags", [
    (["--help"], CONFIG_FLAGS | {"--stage", "--present", "--settings", "shapes"}),
    (["shapes", "--help"], CONFIG_FLAGS | {"--json", "--list-presets"}),
])
def test_help_mentions_every_flag(capsys, monkeypatch, args, flags):
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit) as info:
        main(args)
    out = capsys.readouterr().out
    assert info.value.code == 0
    words = set(out.replace(",", " ").replace("[", " ").replace("]", " ").split())
    # the flags named above, and any flag added later (help=SUPPRESS would hide it)
    parser = build_parser()
    if args[0] == "shapes":
        parser = next(a for a in parser._actions if a.choices and "shapes" in a.choices).choices["shapes"]
    declared = {o for a in parser._actions for o in a.option_strings if o.startswith("--")}
    assert flags | declared <= words, (flags | declared) - words


# --- errors ----------------------------------------------------------------

BAD = [
    (["--heads", "3", "--d-model", "10"], "try 2 or 5 heads"),
    (["--heads", "0"], "heads must be a positive whole number"),
    (["--heads", "abc"], "'abc' is not a whole number"),
    (["--dtype", "float64"], "float64"),
    (["--preset", "nope"], "unknown preset 'nope'"),
    (["--kv-heads", "3", "--heads", "8"], "cannot be shared evenly by 3"),
    (["--bogus"], "--bogus"),
    (["--sentence", "   "], "no words"),
    (["--kv-lora-rank", "64"], "kv_lora_rank is set but latent attention is off"),
    (["--attention", "mla", "--kv-heads", "2"], "--kv-heads 2 does not fit"),
    (["--attention", "gqa", "--heads", "8"], "give --kv-heads 2 or 4"),
    (["--global-tokens", "2"], "global tokens only widen a sliding window or a stride"),
    (["--attention", "mla", "--qk-rope-dim", "3"], "qk_rope_head_dim 3 must be even"),
    (["--positions", "rope", "--d-model", "15", "--heads", "5"], "d_k = 3, an odd width"),
    (["--window", "0"], "window must be a positive whole number"),
    (["--positions", "spiral"], "spiral"),
]


@pytest.mark.parametrize("args,fragment", BAD)
def test_bad_input_is_one_line_and_exit_2(capsys, args, fragment):
    rc, out, err = shapes(capsys, *args)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("mha-explorer: error: ")
    assert fragment in err


@pytest.mark.parametrize("args", [["--heads", "3", "--d-model", "10"], ["--heads", "abc"], ["--bogus"]])
def test_bad_input_in_a_real_process(args):
    r = cli("shapes", *args)
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("mha-explorer: error: ")
    assert "Traceback" not in r.stderr


def test_real_process_json_without_torch():
    code = ("import runpy, sys; sys.argv = ['mha-explorer', 'shapes', '--json', '--preset', 'gpt2']\n"
            "try:\n    runpy.run_module('mha_explorer', run_name='__main__')\n"
            "except SystemExit as e:\n    assert e.code == 0, e.code\n"
            "assert 'torch' not in sys.modules and 'PySide6' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["params"]["total"] == 2_362_368


# --- variants --------------------------------------------------------------

def test_mla_preset_json_keeps_the_keys_with_latent_numbers(capsys):
    data = shapes_json(capsys, "--preset", "deepseek-v2-lite", "--seq", "4", "--batch", "1")
    # q_proj 2048·16·(128+64) + kv_a 2048·(512+64) + norm 512 + kv_b 512·16·(128+128) + o 16·128·2048
    assert data["params"]["total"] == 6_291_456 + 1_179_648 + 512 + 2_097_152 + 4_194_304
    # the checkpoint is stored in bf16: itemsize 2
    assert data["memory"]["kv_cache_per_token"] == (512 + 64) * 2  # (r_kv + d_r) · itemsize
    assert data["memory"]["kv_cache_per_sequence"] == (512 + 64) * 2 * 4
    assert [r["variant"] for r in data["kv_compare"]] == ["MHA", "GQA", "MQA", "MLA"]  # no window set
    mha = data["kv_compare"][0]
    # the model's own head widths, not D / H: keys of d_n + d_r = 128 + 64, values of d_v = 128
    assert mha["bytes_per_token"] == 16 * (192 + 128) * 2  # H · (d_qk + d_v) · itemsize
    assert mha["whole_model_bytes"] == 16 * (192 + 128) * 2 * 4 * 27  # × S 4 × B 1 × 27 layers
    assert "kv_compress" in [s["id"] for s in data["stages"]]


def test_window_bounds_the_cache_per_sequence_in_json(capsys):
    data = shapes_json(capsys, "--preset", "mistral-7b", "--seq", "10000", "--batch", "2",
                       "--dtype", "bfloat16")
    per_token = 2 * 8 * 128 * 2  # 2 · Hkv · d_k · itemsize
    assert data["memory"]["kv_cache_per_token"] == per_token
    assert data["memory"]["kv_cache_per_sequence"] == per_token * 4096  # min(10,000, 4,096) tokens
    assert data["memory"]["kv_cache_batch"] == per_token * 4096 * 2


def test_variant_flags_reach_the_config(capsys):
    cfg = shapes_json(capsys, "--d-model", "64", "--heads", "4", "--attention", "mla", "--kv-lora-rank", "32",
                      "--q-lora-rank", "24", "--qk-nope-dim", "8", "--qk-rope-dim", "4", "--v-head-dim", "12",
                      "--causal", "--window", "3", "--stride", "2", "--global-tokens", "1",
                      "--positions", "rope")["config"]
    assert (cfg["mla"], cfg["kv_lora_rank"], cfg["q_lora_rank"], cfg["qk_nope_head_dim"],
            cfg["qk_rope_head_dim"], cfg["v_head_dim"]) == (True, 32, 24, 8, 4, 12)
    assert (cfg["window"], cfg["stride"], cfg["global_tokens"], cfg["positions"]) == (3, 2, 1, "rope")


def test_table_shows_the_kv_comparison_and_the_latent_formula(capsys):
    rc, out, _ = shapes(capsys, "--preset", "deepseek-v3", "--seq", "4")
    assert rc == 0
    assert "KV cache per token: (r_kv + d_r) × e = (512 + 64) × 2 B = 1.1 KiB" in out  # bf16
    assert "KV cache by variant" in out and "MLA (current)" in out
    assert "q_a_layernorm" in out and "kv_a_layernorm" in out  # both norms counted


def test_list_presets_uses_the_latent_parameters_and_cache(capsys):
    rc, out, _ = shapes(capsys, "--list-presets")
    v3 = next(line for line in out.splitlines() if line.startswith("deepseek-v3"))
    # 7168·1536 + 1536 + 1536·128·192 + 7168·576 + 512 + 512·128·256 + 128·128·7168
    assert f"{11_010_048 + 1_536 + 37_748_736 + 4_128_768 + 512 + 16_777_216 + 117_440_512:,}" in v3
    assert "1,152 B per token" in v3  # (512 + 64) · 2 (bf16)


def test_the_kv_table_names_a_window_only_when_the_config_has_one(capsys):
    _, out, _ = shapes(capsys, "--d-model", "64", "--heads", "4", "--seq", "8")
    table = out.split("KV cache by variant")[1]
    assert "window" not in table and "W =" not in table
    _, out, _ = shapes(capsys, "--d-model", "64", "--heads", "4", "--seq", "8", "--causal", "--window", "3")
    row = next(line for line in out.split("KV cache by variant")[1].splitlines() if "window" in line)
    assert "W = 3, as MHA" in row and "(current)" in row


@pytest.mark.parametrize("key", sorted(MODELS))
def test_whole_model_figures_count_the_trained_models_layers(capsys, key):
    ok, why = runtime.is_available(MODELS[key])
    if not ok:
        pytest.skip(why)
    data = shapes_json(capsys, "--weights", key, "--seq", "4")
    assert data["layers"] == MODELS[key].layers
    for row in data["kv_compare"]:
        assert row["whole_model_bytes"] == row["bytes_per_batch"] * MODELS[key].layers
