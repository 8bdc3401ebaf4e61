"""Long work in a process of its own, with its progress and Cancel, for work that holds the
interpreter lock for seconds at a time: a C extension building a large table (a tokenizer from
its JSON, a GGUF file's vocabulary) keeps every other thread of its process waiting, the window's
event loop included, however the work is threaded.

``run_elsewhere("package.module:function", args, progress=, cancel=)`` starts a fresh
interpreter (spawn: a forked copy of a process with Qt's threads is not safe), calls
``function(*args, progress=..., cancel=...)`` there and returns what it returns (pickled). The
child's ``progress(fraction, text)`` arrives here as it reports; ``cancel()`` is asked here every
POLL_S, and once it says so the child's own ``cancel()`` does at its next look (between pieces
of its work): it ends with Cancelled, and one that does not end within GRACE_S is ended. A
ConfigError in the child is raised here with its field, words and fixes; another error as a
RuntimeError naming it.
"""

from __future__ import annotations

import importlib
import multiprocessing
import time
from collections.abc import Callable
from typing import Any

from mha_explorer.core.errors import Cancelled, ConfigError

POLL_S = 0.05  # how often the parent looks at its cancel while it waits for the child
GRACE_S = 5.0  # a cancelled child that has not ended by then is ended


def _child(target: str, args: tuple, conn, stop) -> None:
    """In the child: run ``target`` and send what happens, one message at a time."""
    try:
        module, name = target.split(":")
        work = getattr(importlib.import_module(module), name)
        result = work(*args, progress=lambda fraction, text="": conn.send(("progress", fraction, text)),
                      cancel=stop.is_set)
    except Cancelled:
        conn.send(("cancelled",))
    except ConfigError as exc:
        conn.send(("config", exc.field, exc.message, exc.suggestions))
    except Exception as exc:  # noqa: BLE001 - every fault goes back as words
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    else:
        conn.send(("done", result))
    finally:
        conn.close()


def run_elsewhere(target: str, args: tuple = (), *, progress: Callable[[float, str], None] | None = None,
                  cancel: Callable[[], bool] | None = None) -> Any:
    """``target(*args, progress=, cancel=)`` run in a process of its own; see the module's doc."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe(duplex=False)  # the child writes, this end reads
    stop = context.Event()
    process = context.Process(target=_child, args=(target, args, theirs, stop), daemon=True,
                              name=f"mha-explorer {target}")
    process.start()
    theirs.close()  # the child's end lives in the child: an EOF here says it is gone
    ended_by: float | None = None
    try:
        while True:
            if cancel is not None and ended_by is None and cancel():
                stop.set()
                ended_by = time.monotonic() + GRACE_S
            if ended_by is not None and time.monotonic() > ended_by:
                raise Cancelled
            if not ours.poll(POLL_S):
                continue
            try:
                kind, *said = ours.recv()
            except EOFError:
                process.join(1.0)
                raise RuntimeError(f"the process for {target} ended without an answer "
                                   f"(exit code {process.exitcode})") from None
            if kind == "progress":
                if progress is not None:
                    progress(*said)
            elif kind == "done":
                return said[0]
            elif kind == "cancelled":
                raise Cancelled
            elif kind == "config":
                raise ConfigError(*said)
            else:
                raise RuntimeError(said[0])
    finally:
        ours.close()
        process.join(GRACE_S if ended_by is None else 0.1)
        if process.is_alive():
            process.kill()
            process.join(1.0)
