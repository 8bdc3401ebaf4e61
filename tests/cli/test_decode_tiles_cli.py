"""`decode` and `tiles` subcommands through a small argparse harness calling run().

The JSON fields are checked against arithmetic written out here; bad input must
be one line on stderr and exit code 2.
"""

from __future__ import annotations

import json

import pytest

from mha_explorer import cli
from mha_explorer.cli import decode as decode_command
from mha_explorer.cli import tiles as tiles_command
from mha_explorer.cli.common import Parser, UsageError


def call(capsys, *argv: str) -> tuple[int, str, str]:
    parser = Parser(prog="mha-explorer")
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    modules = {"decode": decode_command, "tiles": tiles_command}
    for module in modules.values():
        module.register(sub)
    try:
        args = parser.parse_args(list(argv))
        rc = modules[args.command].run(args)
    except UsageError as exc:  # what the main CLI turns into one line and exit 2
        print(f"mha-explorer: error: {exc}", file=__import__("sys").stderr)
        rc = cli.EXIT_USAGE
    out, err = capsys.readouterr()
    return rc, out, err


def test_decode_json_lists_the_prompt_pass_then_each_step(capsys):
    rc, out, err = call(capsys, "decode", "--d-model", "64", "--heads", "8", "--kv-heads", "2",
                        "--batch", "3", "--prompt", "4", "--steps", "3", "--layers", "10", "--json")
    assert rc == 0 and err == ""
    d = json.loads(out)
    rows = d["steps"]
    assert [r["step"] for r in rows] == [0, 1, 2, 3]
    assert [r["cache_tokens"] for r in rows] == [4, 5, 6, 7]
    for r in rows:
        s = r["cache_tokens"]
        assert r["cache_shape"] == [3, 2, s, 8]
        assert r["cache_bytes"] == 2 * 3 * 2 * s * 8 * 4
        assert r["model_cache_bytes"] == 10 * r["cache_bytes"]
        assert isinstance(r["flops"], int) and r["flops"] > 0
    # a generated token's scores, softmax and A·V grow by one key per step
    per_key = 3 * 8 * (2 * 8 + 1) + 5 * 3 * 8 + 2 * 3 * 8 * 8
    assert rows[2]["flops"] - rows[1]["flops"] == per_key


def test_decode_json_with_latent_attention_caches_the_latent_and_rope_key(capsys):
    rc, out, err = call(capsys, "decode", "--attention", "mla", "--d-model", "64", "--heads", "8",
                        "--batch", "2", "--prompt", "3", "--steps", "2", "--json")
    assert rc == 0 and err == ""
    d = json.loads(out)
    # d_k 8: the latent is 4·8 = 32 wide and the RoPE key 8 / 2 = 4 by default
    for r in d["steps"]:
        s = r["cache_tokens"]
        assert r["cache_shape"] == [2, s, 32 + 4]
        assert r["cache_bytes"] == 2 * s * (32 + 4) * 4
    # one more cached token costs each of the 8 heads a score over 36 numbers, a softmax
    # and a weighted sum of 32-wide latents
    per_key = 2 * 8 * (2 * 36 + 1) + 5 * 2 * 8 + 2 * 2 * 8 * 32
    assert d["steps"][2]["flops"] - d["steps"][1]["flops"] == per_key
    assert any("[B, S_t, r_kv + d_r]" in note for note in d["notes"])


def test_decode_check_with_latent_attention_matches_the_full_pass(capsys):
    rc, out, _ = call(capsys, "decode", "--attention", "mla", "--d-model", "32", "--heads", "4",
                      "--prompt", "3", "--steps", "3", "--window", "2", "--check", "--json")
    assert rc == 0
    assert json.loads(out)["max_abs_diff_vs_full"] < 1e-5


def test_decode_with_a_window_stops_growing(capsys):
    rc, out, _ = call(capsys, "decode", "--prompt", "2", "--steps", "5", "--window", "4", "--json")
    assert rc == 0
    assert [r["cache_tokens"] for r in json.loads(out)["steps"]] == [2, 3, 4, 4, 4, 4]


def test_decode_table_names_the_prompt_step(capsys):
    rc, out, _ = call(capsys, "decode", "--prompt", "3", "--steps", "2")
    assert rc == 0
    assert "0 (prompt)" in out and "cache/layer" in out


@pytest.mark.parametrize("argv", [
    ("decode", "--prompt", "0"), ("decode", "--steps", "0"), ("decode", "--steps", "-3"),
    ("decode", "--steps", "1000000"), ("decode", "--layers", "0"), ("decode", "--prompt", "x"),
    ("decode", "--heads", "3"), ("decode", "--window", "0"),
    ("tiles", "--block", "0,4"), ("tiles", "--block", "4,0"), ("tiles", "--block", "4,4,4"),
    ("tiles", "--block", "many"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv):
    rc, out, err = call(capsys, *argv)
    assert rc == 2
    assert out == ""
    assert err.startswith("mha-explorer: error: ") and err.count("\n") == 1


def test_tiles_json_counts_and_compares_with_the_full_computation(capsys):
    rc, out, err = call(capsys, "tiles", "--d-model", "32", "--heads", "4", "--kv-heads", "2",
                        "--batch", "2", "--seq", "10", "--kv-seq", "14", "--causal",
                        "--causal-alignment", "bottom-right", "--block", "4,5", "--json")
    assert rc == 0 and err == ""
    d = json.loads(out)
    # rows 0-3, 4-7, 8-9 against keys 0-4, 5-9, 10-13; query i sees keys 0..i+4
    # row block 0 (last row 3 sees up to key 7): key blocks 0, 1; the others see all three
    assert d["blocks_total"] == 9
    assert d["blocks_computed"] == 2 + 3 + 3
    assert d["full_matrix_bytes"] == 2 * 4 * 10 * 14 * 4
    io = 2 * 2 * 4 * 10 * 8 * 4 + 2 * 2 * 2 * 14 * 8 * 4  # Q and O; K and V
    work = 2 * 2 * 4 * 4 * 8 * 4 + 2 * 2 * 4 * 4 * 4 + 2 * 2 * 4 * 4 * 5 * 4 + 4 * 5
    assert d["peak_bytes"] == io + work
    assert d["max_abs_diff_vs_full"] is not None and d["max_abs_diff_vs_full"] < 1e-5


def test_tiles_too_large_to_compare_says_so(capsys):
    rc, out, _ = call(capsys, "tiles", "--preset", "llama2-7b", "--batch", "1", "--seq", "16384",
                      "--block", "128,128", "--json")
    assert rc == 0
    d = json.loads(out)
    assert d["max_abs_diff_vs_full"] is None and d["notes"]
    assert d["blocks_computed"] == 128 * 129 // 2  # causal preset: the lower triangle of tiles
    assert d["full_matrix_bytes"] == 32 * 16384 * 16384 * 2  # H·T·S·itemsize, fp16 as stored


def test_tiles_table_shows_both_memories(capsys):
    rc, out, _ = call(capsys, "tiles", "--seq", "16", "--causal", "--block", "4,4")
    assert rc == 0
    assert "peak memory, tiled" in out and "full matrix" in out and "skipped 6" in out


def test_decode_and_the_tile_counts_never_import_torch():
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import argparse, sys\n"
        "from mha_explorer import cli\n"
        "from mha_explorer.cli import decode\n"
        "from mha_explorer.core.plan import tiles as tile_plan\n"
        "p = cli.Parser(); sub = p.add_subparsers(dest='command')\n"
        "decode.register(sub)\n"
        "rc = decode.run(p.parse_args(['decode', '--prompt', '3', '--steps', '2', '--json']))\n"
        "tile_plan.tile_plan(cli.config_from_args(argparse.Namespace(seq=64, causal=True)), (8, 8))\n"
        "sys.exit(rc or (3 if 'torch' in sys.modules else 0))\n")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_decode_check_compares_every_step_with_the_full_pass(capsys):
    rc, out, err = call(capsys, "decode", "--d-model", "32", "--heads", "4", "--kv-heads", "1",
                        "--prompt", "5", "--steps", "4", "--window", "3", "--check", "--json")
    assert rc == 0 and err == ""
    assert 0 <= json.loads(out)["max_abs_diff_vs_full"] < 1e-5


def test_decode_check_beyond_the_computed_cap_is_one_line(capsys):
    rc, out, err = call(capsys, "decode", "--prompt", "9000", "--steps", "1", "--check")
    assert rc == 2 and out == "" and err.count("\n") == 1
