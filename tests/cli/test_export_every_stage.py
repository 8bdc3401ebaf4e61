"""``export --stage all`` draws every stage the config has, in its order and named by stage id:
each preset and each variant (positions, RoPE, windows, latent attention's own steps)."""

from __future__ import annotations

import pytest

from mha_explorer import cli
from mha_explorer.cli.common import config_from_args
from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.presets import PRESETS, get_preset
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.specs.export import stage_stem

VARIANTS = {
    "gqa sinusoidal": ["--d-model", "32", "--heads", "4", "--kv-heads", "2", "--positions", "sinusoidal"],
    "mqa rope window": ["--d-model", "32", "--heads", "4", "--kv-heads", "1", "--positions", "rope",
                        "--causal", "--window", "3"],
    "learned positions": ["--d-model", "32", "--heads", "2", "--positions", "learned"],
    "mla rope": ["--d-model", "32", "--heads", "4", "--attention", "mla", "--positions", "rope"],
    "mla query latent": ["--d-model", "32", "--heads", "4", "--attention", "mla", "--q-lora-rank", "8"],
}
SMALL = ["--seq", "4", "--batch", "1"]


def _export(tmp_path, argv: list[str]) -> list[str]:
    out = tmp_path / "out"
    rc = cli.main(["export", "--out", str(out), "--format", "png", "--size", "640x360",
                   "--no-tables", *SMALL, *argv])
    assert rc == 0
    return sorted(p.name for p in out.iterdir())


def _expected(cfg: MHAConfig) -> list[str]:
    ids = build_plan(cfg).stage_ids
    return sorted(f"{stage_stem(s, ids)}{part}.png" for s in ids for part in ("", "-heads"))


def _narrow(name: str) -> list[str]:
    """Flags that keep a preset's kind of layer at a width that draws in milliseconds: MHA,
    GQA or MQA (two key/value heads, or one), its own head width or not, MLA's parts, and
    its positions, window, bias, norms and dtype as the preset sets them. Which stages a
    config has depends on those, not on the width (the test checks it for each preset):
    a 12,288-wide GPT-3 layer drew the same file names in seconds and 3 GB."""
    preset = get_preset(name)
    kv = 1 if preset.n_kv_heads == 1 else 2
    heads = kv if preset.n_kv_heads == preset.n_heads else 2 * kv
    flags = ["--d-model", str(4 * heads), "--heads", str(heads), "--kv-heads", str(kv)]
    if preset.head_dim is not None:
        flags += ["--head-dim", "8"]
    if preset.mla:
        flags += ["--kv-lora-rank", "8", "--qk-nope-dim", "4", "--qk-rope-dim", "4", "--v-head-dim", "4"]
        if preset.q_lora_rank is not None:
            flags += ["--q-lora-rank", "8"]
    return ["--preset", name, *flags]


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_exports_each_of_its_stages(tmp_path, name, capsys):
    cfg = get_preset(name).apply(MHAConfig(seq=4, batch=1))
    narrow = config_from_args(cli.build_parser().parse_args([*SMALL, *_narrow(name)]))
    assert build_plan(narrow).stage_ids == build_plan(cfg).stage_ids  # the preset's own stages
    written = _export(tmp_path, _narrow(name))
    assert written == _expected(cfg)
    for number, stage in enumerate(build_plan(cfg).stage_ids, start=1):  # numbered in the plan's order
        assert f"{number:02d}-{stage}.png" in written and f"{number:02d}-{stage}-heads.png" in written


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_variant_exports_each_of_its_stages(tmp_path, name, capsys):
    written = _export(tmp_path, VARIANTS[name])
    cfg = config_from_args(cli.build_parser().parse_args([*SMALL, *VARIANTS[name]]))
    assert written == _expected(cfg)


def test_a_stage_the_config_lacks_is_one_line(tmp_path, capsys):
    rc = cli.main(["export", "--out", str(tmp_path / "o"), "--stage", "rope", *SMALL])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "no rope stage" in err
