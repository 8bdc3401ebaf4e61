"""decode --check over thousands of steps shows a bar on a terminal and stops at Ctrl+C
with 130 and one line."""

from __future__ import annotations

import sys

import pytest
from terminal_session import assert_stopped_in_one_line, interrupt_at


@pytest.mark.skipif(sys.platform.startswith("win"), reason="POSIX terminals and signals")
def test_a_long_decode_check_shows_a_bar_and_ctrl_c_stops_it():
    run = interrupt_at(["decode", "--check", "--prompt", "8", "--steps", "8000", "--batch", "1"],
                       b"decoding:")
    assert_stopped_in_one_line(run)
