"""Flags the machine cannot honour are one line on stderr and exit 2: an absurd layer
count, a GPU that is not here, and text with control characters is echoed escaped."""

from __future__ import annotations

import contextlib
import io

import pytest

from mha_explorer.cli import main


def run_main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def one_line_usage_error(rc: int, out: str, err: str) -> str:
    assert rc == 2 and out == "", (rc, out, err)
    assert err.startswith("mha-explorer: error: ") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("layers", ["99999999999999999999", "10001", "0"])
def test_decode_refuses_a_layer_count_no_model_has(layers):
    err = one_line_usage_error(*run_main(["decode", "--layers", layers]))
    assert "--layers" in err and "PiB" not in err
    rc, out, err = run_main(["decode", "--layers", "126", "--steps", "2"])  # a real model's depth
    assert rc == 0 and "cache×126" in out, err


def test_export_refuses_a_gpu_that_is_not_here(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    out = tmp_path / "slides"
    err = one_line_usage_error(*run_main(["export", "--out", str(out), "--device", "cuda",
                                          "--d-model", "16", "--heads", "2", "--seq", "4"]))
    assert "CUDA is not available" in err and "--device" in err
    assert not out.exists()  # nothing drawn on the CPU in its place


@pytest.mark.parametrize("text", ["\x1b[31mred", "bell\x07", "tab\there", "del\x7f"])
def test_control_characters_in_an_error_are_escaped(text):
    err = one_line_usage_error(*run_main(["shapes", "--preset", text]))
    body = err[:-1]  # without the final newline
    assert body.isprintable(), repr(err)
    assert repr(text)[1:-1] in body  # written as its escape, so the reader sees what was typed
