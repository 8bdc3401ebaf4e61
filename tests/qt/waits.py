"""How long a test waits for the window, sized for a loaded two-core CI machine on which
two test workers share the cores with other work. A wait ends the moment its condition
holds, so these are ceilings for a failure to be told, not delays: every ``waitUntil``,
``waitSignal`` and ``waitExposed`` names one (tests/test_suite_rules.py checks it)."""

UI_MS = 15_000  # a widget's own reaction: a layout, focus, full screen, a paint, a timer
TRACE_MS = 60_000  # work on the jobs thread: a trace (torch's first import included), its notes



def run_events(ms: int) -> None:
    """Run the event loop for ``ms`` milliseconds, letting other threads run meanwhile.

    QTest.qWait holds Python's interpreter lock for as long as it waits: a thread that
    imports torch or computes a trace then moves only in the moments between two waits, and
    a first trace took a minute instead of two seconds. QEventLoop.exec lets go of the lock."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def wait_until(condition, *, timeout: int, what: str = "the condition") -> None:
    """qtbot.waitUntil for a fixture wider than one test (qtbot is made per test) or a probe
    process: runs the event loop until ``condition()`` is true, or fails after ``timeout`` ms."""
    import time

    deadline = time.monotonic() + timeout / 1000
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen within {timeout} ms")
        run_events(10)
