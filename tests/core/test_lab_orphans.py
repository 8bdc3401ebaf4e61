"""The lab's training process never outlives its window: killed or terminated, with the
training running or paused, the window's process going takes the trainer with it,
quietly (no traceback, no leaked-semaphore warning). Real processes, real signals;
every wait is a poll with a deadline."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import psutil
import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals, /proc")
DEADLINE_S = 60

WINDOW = '''
import sys
from mha_explorer.core.lab.service import LabRequest, ServiceProcess

def main():
    service = ServiceProcess()
    service.ask("train", LabRequest(task="copy", head_counts=(2,), d_model=8, steps=10**6, analyse=False))
    while service.answer()[0] != "progressed":
        pass
    if sys.argv[1] == "paused":
        service.pause(True)
    print(service.pid, flush=True)
    while True:  # reads on, as the page's worker does
        service.answer()

if __name__ == "__main__":
    main()
'''


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.parametrize("state", ["paused", "training"])
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_the_trainer_ends_soon_after_its_window_is_killed(tmp_path, state, how):
    script = tmp_path / "window.py"
    script.write_text(WINDOW)
    window = subprocess.Popen([sys.executable, str(script), state], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        line = window.stdout.readline()
        assert line.strip().isdigit(), window.stderr.read()
        trainer = int(line)
        assert not _gone(trainer)
        window.send_signal(how)
        window.wait(DEADLINE_S)
        deadline = time.monotonic() + DEADLINE_S
        while not _gone(trainer):
            assert time.monotonic() < deadline, f"the trainer ({state}) outlived its window"
            time.sleep(0.05)  # a poll interval, not a timing assumption
        # everything that shared the window's stderr has let go of it: read it whole
        err = window.stderr.read()
    finally:
        if window.poll() is None:
            window.kill()
        window.stdout.close()
        window.stderr.close()
    assert "Traceback" not in err and "leaked" not in err and "Error" not in err, err
