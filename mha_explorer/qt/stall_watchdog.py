"""A watchdog on the GUI thread's event loop: every stop longer than a limit is reported with
the Python stack the GUI thread was in when the stop passed the limit.

A heartbeat timer on the GUI thread notes the time at each tick; a monitor thread looks every few
milliseconds, and when the heartbeat is later than the limit it samples the GUI thread's stack
(``sys._current_frames``), at that moment and again while the stop lasts. When the loop moves
again the heartbeat measures the whole stop and reports it: ``stalled(Stall)``, ``stalls``, and
one paragraph on stderr. A stop while the GUI thread is inside no Python code (its stack is only
the event loop's) is the interpreter lock held elsewhere, or Qt's own work: the other threads'
innermost frames are kept too, so the report names the thread that held it.

Switched on for the window by ``MHA_EXPLORER_STALL_MS`` (the limit in milliseconds, e.g. 100);
the tests and ``benchmarks/bench_lesson.py`` start one themselves.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, Qt, QTimer, Signal

ENV = "MHA_EXPLORER_STALL_MS"
LIMIT_MS = 100.0  # a stop of the event loop longer than this is a bug (the project's rule)
BEAT_MS = 5  # the heartbeat: a stop is measured to within this
SHOWN_FRAMES = 14  # the innermost frames a report prints of the GUI thread's stack
LOOK_S = 0.004  # how often the monitor thread looks at the heartbeat
RESAMPLE_S = 0.25  # a long stop is sampled again this often, so its later causes show too
PROJECT = os.sep + "mha_explorer" + os.sep


@dataclass(frozen=True)
class Stall:
    """One stop of the event loop longer than the limit."""

    ms: float  # from the last heartbeat before it to the first after it
    stack: tuple[str, ...]  # the GUI thread's frames when it passed the limit, outermost first
    later: tuple[tuple[str, ...], ...] = ()  # its innermost frames sampled while it lasted
    others: tuple[str, ...] = ()  # the other Python threads' innermost frames at that moment
    label: str = ""  # what was happening (``StallWatchdog.label``), e.g. a lesson's step

    @property
    def in_python(self) -> bool:
        """Whether the GUI thread was running Python code of its own (not only the event loop)."""
        return any(PROJECT in line for line in self.stack)

    def describe(self) -> str:
        head = f"event loop stopped {self.ms:.0f} ms" + (f" during {self.label}" if self.label else "")
        if not self.stack:  # the monitor could not look: it waited for the lock like the GUI thread
            lines = [head + "; another thread held the interpreter lock all along; as it let go, "
                     "the other threads were in:"] + ["    " + line for line in self.others]
            return "\n".join(lines)
        shown = self.stack[-SHOWN_FRAMES:]
        lines = [head + "; the GUI thread was in (innermost last):"]
        lines += (["    …"] if len(shown) < len(self.stack) else []) + ["    " + line for line in shown]
        for sample in self.later:
            lines.append("  later: " + " < ".join(sample))
        if not self.in_python and self.others:
            lines.append("  (no project code on the GUI thread: the other threads were in)")
            lines += ["    " + line for line in self.others]
        return "\n".join(lines)


def _frames(frame, innermost: int | None = None) -> tuple[str, ...]:
    """``file:line function`` for each frame, outermost first (the last ``innermost`` only)."""
    summary = traceback.extract_stack(frame)
    if innermost is not None:
        summary = summary[-innermost:]
    return tuple(f"{_short(f.filename)}:{f.lineno} {f.name}" for f in summary)


def _short(filename: str) -> str:
    return filename.split(PROJECT)[-1] if PROJECT in filename else os.path.basename(filename)


class StallWatchdog(QObject):
    """``start()``, ``stop()``; ``stalls`` (every Stall since ``reset``), ``longest_ms`` (the
    longest gap between heartbeats since ``reset``, stalls or not); signal ``stalled(Stall)``.
    ``label`` names what is happening now, for the reports. ``report`` is called with each Stall
    (default: its description on stderr; None: silent)."""

    stalled = Signal(object)  # Stall, on the GUI thread once the loop moves again

    def __init__(self, limit_ms: float = LIMIT_MS, *,
                 report: Callable[[Stall], None] | None = None, quiet: bool = False,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.limit_ms = float(limit_ms)
        self.label = ""
        self.stalls: list[Stall] = []
        self.longest_ms = 0.0
        self._report = None if quiet else (report or _to_stderr)
        self._gui = threading.get_ident()
        self._lock = threading.Lock()
        self._beat = time.perf_counter()
        self._sampled: tuple[float, tuple[str, ...], tuple[str, ...]] | None = None  # (beat, stack, others)
        self._later: list[tuple[str, ...]] = []
        self._next_sample = 0.0  # when the monitor samples a long stop again
        self._running = False
        self._monitor: threading.Thread | None = None
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(BEAT_MS)
        self._timer.timeout.connect(self._on_beat)

    def start(self) -> None:
        if self._running:
            return
        self._running = True
        with self._lock:
            self._beat = time.perf_counter()
        self._timer.start()
        self._monitor = threading.Thread(target=self._watch, name="stall-watchdog", daemon=True)
        self._monitor.start()

    def stop(self) -> None:
        self._running = False
        self._timer.stop()
        if self._monitor is not None:
            self._monitor.join(1.0)
            self._monitor = None

    def reset(self) -> list[Stall]:
        """Forget what was seen; returns the stalls seen until now."""
        seen, self.stalls, self.longest_ms = self.stalls, [], 0.0
        with self._lock:
            self._beat = time.perf_counter()
        return seen

    # the GUI thread ---------------------------------------------------------------------------
    def _on_beat(self) -> None:
        now = time.perf_counter()
        with self._lock:
            last, self._beat = self._beat, now
            sampled, later = self._sampled, self._later
            self._sampled, self._later = None, []
        ms = 1000 * (now - last)
        self.longest_ms = max(self.longest_ms, ms)
        if ms <= self.limit_ms:
            return
        if sampled is not None and sampled[0] == last:
            stack, others = sampled[1], sampled[2]
        else:  # the monitor never got the interpreter lock: the thread that held it, as it let go
            stack, others = (), _other_threads((self._gui,))
        stall = Stall(ms, stack, tuple(later), others, self.label)
        self.stalls.append(stall)
        if self._report is not None:
            self._report(stall)
        self.stalled.emit(stall)

    # the monitor thread -----------------------------------------------------------------------
    def _watch(self) -> None:
        while self._running:
            time.sleep(LOOK_S)
            now = time.perf_counter()
            with self._lock:
                beat, sampled = self._beat, self._sampled
            late = now - beat
            if late * 1000 <= self.limit_ms:
                continue
            frames = sys._current_frames()
            gui = frames.get(self._gui)
            if sampled is None or sampled[0] != beat:  # the first look past the limit
                others = _other_threads((self._gui, threading.get_ident()), frames)
                with self._lock:
                    if self._beat == beat:
                        self._sampled = (beat, _frames(gui) if gui is not None else (), others)
                        self._later = []
                        self._next_sample = now + RESAMPLE_S
            elif now >= self._next_sample and gui is not None:
                with self._lock:
                    if self._beat == beat:
                        self._later.append(tuple(reversed(_frames(gui, 3))))
                        self._next_sample = now + RESAMPLE_S


def _other_threads(skip: tuple[int, ...], frames=None) -> tuple[str, ...]:
    """Each other Python thread's innermost frames, innermost first."""
    frames = sys._current_frames() if frames is None else frames
    return tuple(f"[{_thread_name(ident)}] " + " < ".join(reversed(_frames(frame, 3)))
                 for ident, frame in frames.items() if ident not in skip and ident != threading.get_ident())


def _thread_name(ident: int) -> str:
    for thread in threading.enumerate():
        if thread.ident == ident:
            return thread.name
    return str(ident)  # a thread Python did not start (Qt's own)


def _to_stderr(stall: Stall) -> None:
    print(f"mha-explorer: stall: {stall.describe()}", file=sys.stderr, flush=True)


def limit_from_env(environ=None) -> float | None:
    """The limit ``MHA_EXPLORER_STALL_MS`` asks for (a positive number of milliseconds), None
    when unset or unusable (a warning on stderr says why)."""
    raw = (os.environ if environ is None else environ).get(ENV, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        print(f"mha-explorer: warning: {ENV}={raw!r} is not a positive number of milliseconds; "
              "no stall watchdog", file=sys.stderr)
        return None
    return value


def watchdog_from_env(parent: QObject | None = None) -> StallWatchdog | None:
    """A started watchdog when ``MHA_EXPLORER_STALL_MS`` asks for one, else None."""
    limit = limit_from_env()
    if limit is None:
        return None
    dog = StallWatchdog(limit, parent=parent)
    dog.start()
    return dog
