"""The CLI's shapes table and the window's Shapes dock say the same words for every
row of every stage: both read one table builder, and this holds them to it."""

from __future__ import annotations

import pytest

from mha_explorer.cli import main
from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.stages.catalog import STAGE_IDS

CONFIGS = {
    "mha": (MHAConfig(d_model=64, n_heads=4, batch=2, seq=3),
            ["--d-model", "64", "--heads", "4", "--batch", "2", "--seq", "3"]),
    "gqa cross causal": (
        MHAConfig(d_model=96, n_heads=6, n_kv_heads=2, batch=1, seq=5, kv_seq=7, causal=True),
        ["--d-model", "96", "--heads", "6", "--kv-heads", "2", "--batch", "1", "--seq", "5",
         "--kv-seq", "7", "--causal"]),
    "mqa bf16 no bias": (
        MHAConfig(d_model=4096, n_heads=32, n_kv_heads=1, batch=4, seq=2048, bias=False,
                  dtype="bfloat16"),
        ["--d-model", "4096", "--heads", "32", "--kv-heads", "1", "--batch", "4", "--seq", "2048",
         "--no-bias", "--dtype", "bfloat16"]),
}


def cli_rows(capsys, flags: list[str]) -> list[list[str]]:
    """The table's data rows as the CLI prints them, split into cells at the column starts."""
    assert main(["shapes", *flags]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("Stage"))
    end = lines.index("", header)
    head = lines[header]
    columns = ("Stage", "Tensor", "Dims", "Shape", "Strides", "Contiguous", "FLOPs", "New memory")
    starts = [head.index(name) for name in columns] + [None]
    spans = list(zip(starts, starts[1:], strict=False))
    return [[line[a:b].strip() for a, b in spans] for line in lines[header + 1:end]]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_cli_and_window_tables_print_the_same_words(qtbot, capsys, name):
    from mha_explorer.qt.controller import Controller
    from mha_explorer.qt.panels.shapes import COLUMNS, ShapesTable

    cfg, flags = CONFIGS[name]
    controller = Controller(cfg)  # never started: the table needs only the plan
    table = ShapesTable(controller)
    qtbot.addWidget(table)
    model = table.shapes_model
    window = [[model.index(r, c).data() for c in range(len(COLUMNS))] for r in range(model.rowCount())]
    cli = cli_rows(capsys, flags)
    plan = build_plan(cfg)
    assert len(cli) == len(window) == sum(len(s.tensors) for s in plan.stages)
    # every stage opens its group with its number, in order
    assert [row[0].split()[0] for row in window if row[0]] == [str(i + 1) for i in range(len(STAGE_IDS))]
    for cli_row, window_row in zip(cli, window, strict=True):
        assert cli_row == window_row


def test_the_view_stage_says_view_in_both(capsys):
    cfg, flags = CONFIGS["mha"]
    rows = cli_rows(capsys, flags)
    view_rows = rows[4:7]  # Q, K, V after the input row and the three projections
    assert [r[1] for r in view_rows] == ["Q", "K", "V"]
    assert all(r[5] == "yes (view)" and r[7] == "view, no copy" for r in view_rows)
