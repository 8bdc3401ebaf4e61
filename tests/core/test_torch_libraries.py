"""torch's libraries mapped ahead of its import leave torch working as usual, and the mapping
does not hold the interpreter lock (a thread beside it keeps running)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

PROBE = textwrap.dedent("""
    import sys, threading, time
    from mha_explorer.core.engine.libraries import map_torch_libraries
    ticks, done = [], threading.Event()
    def tick():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)
    beside = threading.Thread(target=tick)
    beside.start()
    start = time.perf_counter()
    mapped = map_torch_libraries()
    end = time.perf_counter()
    done.set()
    beside.join()
    during = [t for t in ticks if start < t < end]
    import torch
    print(mapped, "torch" in sys.modules, float(torch.arange(4.0).sum()), map_torch_libraries(),
          len(during))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="dlopen through libc: Linux only")
def test_mapped_libraries_leave_torch_working_and_the_other_threads_running():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    mapped, imported, total, again, ticks = done.stdout.split()
    assert (mapped, imported, float(total), again) == ("True", "True", 6.0, "False")
    # the thread beside it ran while the libraries loaded (holding the lock, it ran not once)
    assert int(ticks) >= 3
