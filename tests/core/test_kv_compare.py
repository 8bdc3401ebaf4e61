"""The KV-cache comparison, number by number, from written-out arithmetic."""

from __future__ import annotations

import subprocess
import sys

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.plan.kv_cache import (
    KV_COMPARE_HEADER,
    kv_cache_bytes,
    kv_compare_rows,
    kv_compare_table,
)


def test_llama_sized_rows_written_out():
    # D 4096, H 32, d_k 128, float16 (2 B), S 8192, B 4; GQA is the config's own Hkv 8
    cfg = MHAConfig(d_model=4096, n_heads=32, n_kv_heads=8, batch=4, seq=8192, dtype="float16")
    rows = {r.variant: r for r in kv_compare_rows(cfg, layers=32)}
    assert rows["MHA"].per_token == 2 * 32 * 128 * 2 == 16_384
    assert rows["GQA"].per_token == 2 * 8 * 128 * 2 == 4_096 and rows["GQA"].current
    assert rows["MQA"].per_token == 2 * 1 * 128 * 2 == 512
    # MLA with the defaults from d_k 128: kv_lora_rank 512, rope 64
    assert rows["MLA"].per_token == (512 + 64) * 2 == 1_152
    assert rows["MHA"].per_sequence == 16_384 * 8192 == 134_217_728
    assert rows["MHA"].per_batch == 134_217_728 * 4 == 536_870_912
    assert rows["MHA"].whole_model == 536_870_912 * 32 == 17_179_869_184  # 16 GiB
    # no window set: no window row (a made-up W would read as the config's own)
    assert "window" not in rows


def test_window_row_uses_the_configs_window_and_global_tokens():
    cfg = MHAConfig(d_model=64, n_heads=4, seq=100, causal=True, window=10, stride=2, global_tokens=3)
    window = kv_compare_rows(cfg)[-1]
    assert window.variant == "window" and window.current
    assert window.tokens == 10 + 3 and window.per_token == 2 * 4 * 16 * 4  # MHA float32


def test_gqa_row_picks_a_divisor_near_a_quarter_and_skips_prime_heads():
    assert [r.variant for r in kv_compare_rows(MHAConfig(d_model=64, n_heads=8))] == \
        ["MHA", "GQA", "MQA", "MLA"]
    gqa = kv_compare_rows(MHAConfig(d_model=64, n_heads=8))[1]
    assert gqa.setting == "Hkv = 2" and gqa.per_token == 2 * 2 * 8 * 4
    assert "GQA" not in [r.variant for r in kv_compare_rows(MHAConfig(d_model=70, n_heads=7))]


def test_table_rows_carry_raw_numbers_and_the_ratio_to_mha():
    cfg = MHAConfig(d_model=64, n_heads=4, n_kv_heads=1, seq=8, batch=2)
    table = kv_compare_table(cfg)
    assert all(len(row) == len(KV_COMPARE_HEADER) for row in table)
    mqa = next(row for row in table if row[0].startswith("MQA"))
    assert mqa[0] == "MQA (current)" and mqa[3] == 2 * 16 * 4 and mqa[-1] == "0.25×"


def test_the_variant_arithmetic_modules_import_without_torch_or_qt():
    # a fresh interpreter: this test process may have torch loaded already
    modules = ("variants.registry", "variants.latent", "variants.grouped", "specs.mask_counts",
               "specs.positions", "plan.build", "plan.kv_cache", "plan.masks", "config.rules")
    code = ("import sys; " + "; ".join(f"import mha_explorer.core.{m}" for m in modules)
            + "; import mha_explorer.cli.variant_flags; "
            "heavy = [m for m in ('torch', 'PySide6', 'pyqtgraph') if m in sys.modules]; "
            "assert not heavy, heavy")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_kv_cache_bytes_of_the_config_itself():
    # GQA: 2 · 2 kv heads · 16 · 4 B = 256 B per token; causal window 6 of S 20: 6 tokens; B 3
    gqa = MHAConfig(d_model=64, n_heads=4, n_kv_heads=2, batch=3, seq=20, causal=True, window=6)
    assert kv_cache_bytes(gqa) == (256, 256 * 6, 256 * 6 * 3)
    # MLA: (kv_lora_rank 40 + rope 8) · 2 B = 96 B per token, all 20 tokens
    mla = MHAConfig(d_model=64, n_heads=4, batch=3, seq=20, mla=True, kv_lora_rank=40,
                    qk_rope_head_dim=8, dtype="float16")
    assert kv_cache_bytes(mla) == (96, 96 * 20, 96 * 20 * 3)
