"""The window's first trace, computed by a process of its own that starts with the window.

Importing torch takes 2-2.5 s on a two-core machine: most of a first launch's wait for its
heatmaps. In the window's process it can only begin once the window is on screen (a thread
would share the interpreter lock with Qt's start-up and delay the window instead), so the
heatmaps came seconds after the window. This process, started with the command, imports torch
on another core while the window starts, waits for the window's first ComputeRequest on stdin,
answers with the Trace on stdout and exits; the window's own torch loads after that, for every
later run.

It is used only where it can win: two or more cores, and a first config small enough that
its trace crosses the pipe in milliseconds. When its torch import begins depends on the cores
(``go``): with GO_AT_LAUNCH_CORES or more, at once; with fewer, once the window is shown. On
two cores an import begun at launch slowed the window's own imports by a quarter (mapped at
537 ms against 434 ms with no early engine, medians of 6 alternated launches at load 3) while
bringing the heatmaps only about 0.15 s sooner; begun at the show, the window is as fast as
without it and the heatmaps still come before the window's own torch would have loaded. Until
the window asks for its trace (once its first frame is on screen) it runs only on CPU time
nothing else wants (Linux's SCHED_IDLE), so on busy cores it does not take the window's or the
X server's share. Whatever goes wrong with it (it died, torch failed there) the window computes
the first trace itself, so the result is never missing. No Qt here: the child imports only the
engine.

Protocol: GO (one byte), then one pickled ComputeRequest in; pickled ("progress", fraction,
words) messages, then ("trace", Trace) or ("error", message), out. Both ends are this package's
own code.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import subprocess
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

# nothing of the project at module level: the launcher starts the process before the
# command line (and the core under it) is imported

if TYPE_CHECKING:
    from mha_explorer.core.stages.trace import Trace
    from mha_explorer.qt.compute import ComputeRequest, Progress, RunFunction

EARLY_MAX_BYTES = 256 << 20  # a first trace larger than this is computed in the window's process
POLL_S = 0.05  # how often a wait for the child hears cancel
GO = b"g"  # the child's torch import begins when it reads this
# with this many usable cores the import begins at launch: the window, the X server and the
# child each have one (measured only on two cores, where it is better begun at the show)
GO_AT_LAUNCH_CORES = 4


class EarlyEngineLost(Exception):
    """The early process could not answer; the caller computes the trace itself."""


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class EarlyEngine:
    """``start()`` (None where it cannot help), ``go()`` (torch's import begins; start() calls
    it itself where there are cores to spare), ``run(request, cancel, progress)`` once,
    ``close()``. The child lives in a session of its own, so Ctrl+C in the terminal reaches
    only the window, which closes it; if the window dies, the child reads end-of-file on
    stdin and exits (at once, or once torch has loaded), so it never outlives it for long."""

    def __init__(self, process: subprocess.Popen) -> None:
        self._process = process
        self._gone = False  # GO sent

    @classmethod
    def start(cls) -> EarlyEngine | None:
        if usable_cores() < 2:  # on one core it would slow the window by as much as it saves
            return None
        try:
            process = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                       start_new_session=True)
        except OSError:
            return None
        _set_policy(process.pid, "SCHED_IDLE")  # spare CPU only, while the window starts
        engine = cls(process)
        if usable_cores() >= GO_AT_LAUNCH_CORES:
            engine.go()
        return engine

    @property
    def pid(self) -> int:
        return self._process.pid

    def go(self) -> None:
        """Let the child import torch now (once; a child already gone is left to run())."""
        if not self._gone:
            self._gone = True
            with contextlib.suppress(OSError, ValueError):
                self._process.stdin.write(GO)
                self._process.stdin.flush()

    def run(self, request: ComputeRequest, cancel: Callable[[], bool], progress: Progress) -> Trace:
        """The request's trace, computed by the child (call once, on the jobs thread). Raises
        Cancelled when ``cancel`` says so, EarlyEngineLost when the child cannot answer."""
        _set_policy(self.pid, "SCHED_OTHER")  # the window is up: an ordinary share from now on
        try:
            try:
                self.go()
                pickle.dump(request, self._process.stdin)
                self._process.stdin.close()
            except (OSError, ValueError) as exc:  # the child is gone already
                raise EarlyEngineLost(str(exc)) from exc
            while True:
                message = self._next_message(cancel)
                if message[0] == "progress":
                    progress(*message[1:])
                elif message[0] == "trace":
                    return message[1]
                else:
                    raise EarlyEngineLost(message[1])
        finally:
            self.close()

    def _next_message(self, cancel: Callable[[], bool]) -> tuple:
        from mha_explorer.core.errors import Cancelled

        out = self._process.stdout
        while not select.select([out], [], [], POLL_S)[0]:
            if cancel():
                raise Cancelled()
        try:
            return pickle.load(out)
        except (EOFError, pickle.UnpicklingError, OSError) as exc:
            raise EarlyEngineLost(f"the early engine stopped: {exc or type(exc).__name__}") from exc

    def close(self) -> None:
        """Stop the child now (safe to call twice, from any thread)."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        for pipe in (self._process.stdin, self._process.stdout):
            if not pipe.closed:
                pipe.close()


class FirstRunEarly:
    """A RunFunction (qt/compute.py) whose first call the early process answers; every
    later call, and the first should the early process fail or the trace be too large for
    the pipe, goes to ``run`` in the window's process. ``first_elsewhere`` tells the
    controller to load the window's own torch after that first answer, not before it."""

    def __init__(self, early: EarlyEngine | None, run: RunFunction) -> None:
        self._early = early
        self._run = run

    @property
    def first_elsewhere(self) -> bool:
        return self._early is not None

    def __call__(self, request: ComputeRequest, cancel: Callable[[], bool], progress: Progress) -> Trace:
        early, self._early = self._early, None  # one answer: later runs are the window's own
        if early is not None:
            from mha_explorer.core.errors import Cancelled
            from mha_explorer.core.plan.memory import estimate

            if estimate(request.config).full_bytes > EARLY_MAX_BYTES:
                early.close()
            else:
                try:
                    return early.run(request, cancel, progress)
                except EarlyEngineLost:
                    if cancel():  # closed as the window shuts down: nothing to compute
                        raise Cancelled() from None
                    # else computed here instead, with the same request
        return self._run(request, cancel, progress)

    def close(self) -> None:
        early, self._early = self._early, None
        if early is not None:
            early.close()


def _set_policy(pid: int, policy: str) -> None:
    """Linux's scheduling policy for process ``pid``, one of ours. Any user may send it to
    SCHED_IDLE; back needs RLIMIT_NICE of 20 or privilege, and where refused (or on another
    system) it keeps the policy it has."""
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setscheduler(pid, getattr(os, policy), os.sched_param(0))


def _send(message: tuple) -> None:
    pickle.dump(message, sys.stdout.buffer)
    sys.stdout.buffer.flush()


def main() -> int:
    if sys.stdin.buffer.read(1) != GO:  # the window closed before it let this begin
        return 0
    started = time.perf_counter()
    from mha_explorer.qt.compute import load_engine, run_engine  # imports torch, on this core

    load_engine()
    loaded = time.perf_counter() - started
    try:
        request = pickle.load(sys.stdin.buffer)
    except (EOFError, pickle.UnpicklingError):  # the window closed, or computes itself
        return 0
    _send(("progress", 0.0, f"PyTorch loaded in {loaded:.1f} s; computing…"))
    try:
        trace = run_engine(request, lambda: False, lambda f, words="": _send(("progress", f, words)))
    except Exception as exc:  # noqa: BLE001 - the window computes it itself and says why
        _send(("error", f"{type(exc).__name__}: {exc}"))
        return 1
    _send(("trace", trace))
    return 0


if __name__ == "__main__":
    sys.exit(main())
