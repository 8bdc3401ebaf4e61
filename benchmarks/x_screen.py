"""A private X server and a watcher that sees a process's window appear, as a window manager
would: the moment the server maps it (what ``xdotool search --onlyvisible`` finds) and the
moment its first pixels reach the screen (the DAMAGE extension's first report).

Xlib through ctypes (libX11, libXdamage): no package beyond the system's X libraries. The
watcher listens for events; it never polls the server, so it takes no CPU from the launch it
is timing.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import select
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass

SUBSTRUCTURE_NOTIFY_MASK = 1 << 19
CREATE_NOTIFY, MAP_NOTIFY = 16, 19
DAMAGE_REPORT_NON_EMPTY = 3
XA_CARDINAL = 6
XEVENT_LONGS = 24  # sizeof(XEvent) is 24 longs


class _AnyEvent(ctypes.Structure):  # the head every X event shares, then a window
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                ("display", ctypes.c_void_p), ("event", ctypes.c_ulong), ("window", ctypes.c_ulong)]


class _DamageEvent(ctypes.Structure):  # XDamageNotifyEvent's head: the drawable damaged
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                ("display", ctypes.c_void_p), ("drawable", ctypes.c_ulong)]


class _XEvent(ctypes.Union):
    _fields_ = [("any", _AnyEvent), ("damage", _DamageEvent), ("pad", ctypes.c_long * XEVENT_LONGS)]


def _library(name: str) -> ctypes.CDLL:
    found = ctypes.util.find_library(name)
    if found is None:
        raise OSError(f"lib{name} is not installed")
    return ctypes.CDLL(found)


@dataclass
class Seen:
    mapped: float | None = None  # time.time() of the window's MapNotify
    painted: float | None = None  # time.time() of its first damage after that
    cpu: float | None = None  # CPU seconds its process had used when it was mapped (all threads)


class WindowWatcher:
    """Events of one X display: ``wait_for(pid, timeout)`` returns when a top-level window of
    process ``pid`` (its _NET_WM_PID) was mapped and then first drawn into."""

    def __init__(self, display: str) -> None:
        self.x = x = _library("X11")
        self.damage = damage = _library("Xdamage")
        x.XOpenDisplay.restype = ctypes.c_void_p
        x.XOpenDisplay.argtypes = [ctypes.c_char_p]
        x.XDefaultRootWindow.restype = ctypes.c_ulong
        x.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
        x.XSelectInput.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_long]
        x.XConnectionNumber.argtypes = [ctypes.c_void_p]
        x.XPending.argtypes = [ctypes.c_void_p]
        x.XNextEvent.argtypes = [ctypes.c_void_p, ctypes.POINTER(_XEvent)]
        x.XInternAtom.restype = ctypes.c_ulong
        x.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        x.XGetWindowProperty.argtypes = [
            ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_long, ctypes.c_long,
            ctypes.c_int, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_int),
            ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_ulong),
            ctypes.POINTER(ctypes.c_void_p)]
        x.XFree.argtypes = [ctypes.c_void_p]
        x.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
        x.XCloseDisplay.argtypes = [ctypes.c_void_p]
        x.XSetErrorHandler.restype = ctypes.c_void_p
        damage.XDamageQueryExtension.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int),
                                                 ctypes.POINTER(ctypes.c_int)]
        damage.XDamageCreate.restype = ctypes.c_ulong
        damage.XDamageCreate.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int]
        # a window gone before we looked at it raises BadWindow: ignore it, as xdotool does
        self._on_error = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(
            lambda _d, _e: 0)
        x.XSetErrorHandler(self._on_error)
        self.dpy = x.XOpenDisplay(display.encode())
        if not self.dpy:
            raise OSError(f"cannot open X display {display}")
        event_base, error_base = ctypes.c_int(), ctypes.c_int()
        if not damage.XDamageQueryExtension(self.dpy, ctypes.byref(event_base), ctypes.byref(error_base)):
            raise OSError("the X server has no DAMAGE extension")
        self.damage_notify = event_base.value
        self.root = x.XDefaultRootWindow(self.dpy)
        self.pid_atom = x.XInternAtom(self.dpy, b"_NET_WM_PID", 0)
        x.XSelectInput(self.dpy, self.root, SUBSTRUCTURE_NOTIFY_MASK)
        x.XSync(self.dpy, 0)
        self.seen: dict[int, Seen] = {}  # window id -> what was seen of it
        self.owner: dict[int, int] = {}  # mapped window id -> its _NET_WM_PID

    def close(self) -> None:
        self.x.XCloseDisplay(self.dpy)

    def _pid_of(self, window: int) -> int | None:
        kind, fmt, n, after = ctypes.c_ulong(), ctypes.c_int(), ctypes.c_ulong(), ctypes.c_ulong()
        data = ctypes.c_void_p()
        status = self.x.XGetWindowProperty(self.dpy, window, self.pid_atom, 0, 1, 0, XA_CARDINAL,
                                           ctypes.byref(kind), ctypes.byref(fmt), ctypes.byref(n),
                                           ctypes.byref(after), ctypes.byref(data))
        try:
            if status != 0 or not data.value or n.value < 1:
                return None
            return ctypes.cast(data, ctypes.POINTER(ctypes.c_long))[0]
        finally:
            if data.value:
                self.x.XFree(data)

    def _handle(self, event: _XEvent, now: float) -> None:
        kind = event.any.type
        if kind == CREATE_NOTIFY:  # watch every top-level window for its first pixels
            self.damage.XDamageCreate(self.dpy, event.any.window, DAMAGE_REPORT_NON_EMPTY)
            self.seen[event.any.window] = Seen()
        elif kind == MAP_NOTIFY:
            seen = self.seen.setdefault(event.any.window, Seen())
            seen.mapped = seen.mapped or now
            pid = self._pid_of(event.any.window)
            if pid is not None:
                self.owner[event.any.window] = pid
                seen.cpu = seen.cpu or cpu_seconds(pid)
        elif kind == self.damage_notify:
            seen = self.seen.get(event.damage.drawable)
            if seen is not None and seen.mapped is not None and seen.painted is None:
                seen.painted = now

    def _visible_of(self, pid: int) -> Seen | None:
        for window, owner in self.owner.items():
            seen = self.seen[window]
            if owner == pid and seen.painted is not None:
                return seen
        return None

    def wait_for(self, pid: int, timeout: float) -> Seen | None:
        """The first window of ``pid`` to be mapped and drawn, or None after ``timeout`` s."""
        end = time.time() + timeout
        fd = self.x.XConnectionNumber(self.dpy)
        event = _XEvent()
        while True:
            while self.x.XPending(self.dpy):
                self.x.XNextEvent(self.dpy, ctypes.byref(event))
                self._handle(event, time.time())
            found = self._visible_of(pid)
            if found is not None:
                return found
            left = end - time.time()
            if left <= 0:
                return None
            select.select([fd], [], [], min(left, 0.5))

    def forget(self) -> None:
        self.seen.clear()
        self.owner.clear()


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds of process ``pid`` so far (Linux), None when unknown."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


@contextlib.contextmanager
def x_server(size: str = "1920x1080x24") -> Iterator[str]:
    """A private Xvfb for the benchmark; yields its DISPLAY (":N")."""
    if shutil.which("Xvfb") is None:
        raise OSError("Xvfb is not installed")
    read, write = os.pipe()
    server = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", size, "-nolisten", "tcp"],
                              pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    try:
        with os.fdopen(read) as pipe:
            number = pipe.readline().strip()  # Xvfb writes its display number once it listens
        if not number:
            raise OSError("Xvfb did not start")
        yield f":{number}"
    finally:
        server.terminate()
        server.wait()
