"""``mha-explorer tiles``: FlashAttention-style tiles for the current config.

The counts, peak memory and FLOPs come from the tile plan (no torch). When the
full T × S matrix is small enough to build, the tiled path is also computed and
compared with F.scaled_dot_product_attention on the same mask
(``max_abs_diff_vs_full``); otherwise that field is null and a note says why.
"""

from __future__ import annotations

import argparse
import json

from mha_explorer.cli.common import add_config_flags, cpu_only_note, fail
from mha_explorer.cli.decode import add_layer_flags, config_with_window
from mha_explorer.cli.progress import Progress
from mha_explorer.console import emit
from mha_explorer.core.config import ConfigError, MHAConfig
from mha_explorer.core.units import format_bytes, format_count

CHECK_MAX_CELLS = 1 << 24  # B·H·T·S compared against the full computation
CHECK_MAX_TILES = 1 << 15  # tiles the comparison walks one by one (each a few small torch calls)


NAME = "tiles"


def register(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        NAME, help="FlashAttention tiles: computed and skipped tiles, peak memory O(T·d)",
        description="Split attention into tiles of BR query rows × BC keys with an online softmax: "
        "count the tiles computed and the ones a causal mask skips, compare the peak memory with "
        "the full T × S matrix, and check the tiled output against the full computation.")
    add_config_flags(p, inherit=True)
    add_layer_flags(p)
    p.add_argument("--block", default="64,64", metavar="BR,BC",
                   help="query rows and keys per tile (default 64,64)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def tiles_report(cfg: MHAConfig, block: tuple[int, int]) -> dict:
    """The tile plan, and the comparison with the full computation when it is small enough:
    both bounded, and shown as a bar on a terminal's stderr while they run."""
    from mha_explorer.core.plan.tiles import tile_plan  # numpy: not at every command's start

    with Progress(100, unit="%", label="counting tiles") as bar:
        plan = tile_plan(cfg, block, progress=bar.fraction)
    report = {"config": cfg.to_dict(), "variant": cfg.variant, **plan.to_dict(),
              "max_abs_diff_vs_full": None, "notes": []}
    cells = plan.heads_times_batch * cfg.T * cfg.S
    if cells > CHECK_MAX_CELLS:
        report["notes"].append(f"not compared with the full computation: B·H·T·S is {cells:,} cells, "
                               f"above {CHECK_MAX_CELLS:,}")
    elif plan.blocks_total > CHECK_MAX_TILES:
        report["notes"].append(f"not compared with the full computation: {plan.blocks_total:,} tiles of "
                               f"{block[0]}×{block[1]}, above the {CHECK_MAX_TILES:,} the comparison walks "
                               "one by one; use larger blocks")
    else:
        from mha_explorer.core.engine.tiled import max_abs_diff_vs_full  # torch: only for a size it can check

        cpu_only_note(cfg, "the comparison with the full computation")
        with Progress(plan.blocks_total, unit="tile", label="comparing") as bar:
            seen = iter(range(1, plan.blocks_total + 1))
            report["max_abs_diff_vs_full"] = max_abs_diff_vs_full(
                cfg, block, on_tile=lambda _ev: bar.to(next(seen)))
    return report


def format_report(d: dict) -> str:
    c = d["config"]
    br, bc = d["block"]
    diff = d["max_abs_diff_vs_full"]
    lines = [
        f"Tiles — {d['variant']}: D={c['d_model']}  H={c['n_heads']}  B={c['batch']}  T={c['seq']}  "
        f"S={c['kv_seq'] or c['seq']}" + ("  causal " + c["causal_alignment"] if c["causal"] else ""),
        f"blocks of {br} rows × {bc} keys: {d['row_blocks']:,} × {d['col_blocks']:,} = "
        f"{d['blocks_total']:,} tiles per batch element and head",
        f"  computed {d['blocks_computed']:,} ({d['blocks_partial']:,} cut by the mask), "
        f"skipped {d['blocks_skipped']:,}",
        f"peak memory, tiled: {format_bytes(d['peak_bytes'])}  (grows with T·d)",
    ]
    lines += [f"  {name}: {format_bytes(n)}" for name, n in d["peak_terms"].items()]
    lines += [
        f"full matrix B·H·T·S: {format_bytes(d['full_matrix_bytes'])}  (grows with T·S)",
        f"FLOPs: {format_count(d['flops'])} either way; {format_count(d['flops_tiled'])} "
        "in the tiles actually computed",
        "max |tiled − full|: " + ("not computed" if diff is None else f"{diff:.3g}"),
    ]
    lines += [f"note: {n}" for n in d["notes"]]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from mha_explorer.core.plan.tiles import parse_block

    try:
        block = parse_block(args.block)
    except ConfigError as exc:
        return fail(exc.message)
    except ValueError as exc:  # only the block's own reading is blamed on --block
        return fail(f"argument --block: {exc}")
    try:
        report = tiles_report(config_with_window(args), block)
    except ConfigError as exc:
        return fail(exc.message)
    emit(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0

