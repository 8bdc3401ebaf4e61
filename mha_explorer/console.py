"""What the command line prints, checked: a closed or full standard output is one
line on stderr and exit 1, not a traceback or a silent success."""

from __future__ import annotations

import os
import sys

from mha_explorer.core.system import safe_files

EXIT_IO = 1


class OutputError(OSError):
    """Standard output could not take what was printed."""


def emit(text: str) -> None:
    """Print ``text`` and a newline to standard output, flushed now so a failure is
    seen here (and reported) rather than at exit (a traceback)."""
    if sys.stdout is None:
        raise OutputError("standard output is closed")
    try:
        _write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        _abandon_stdout()
        raise  # the reader left early (``| head``): not an error of ours
    except OSError as exc:
        _abandon_stdout()
        raise OutputError(exc.errno, f"could not write to standard output: {exc.strerror or exc}") from exc
    except ValueError as exc:  # a stream already closed in this process
        raise OutputError(f"could not write to standard output: {exc}") from exc


def _write(text: str) -> None:
    """A file name that is not UTF-8 (its bytes kept as lone surrogates) goes out as the
    bytes it was given, on a stream whose encoding would refuse it."""
    try:
        sys.stdout.write(text)
    except UnicodeEncodeError:
        encoding = sys.stdout.encoding or "utf-8"
        try:
            data = text.encode(encoding, "surrogateescape")
        except UnicodeEncodeError:  # a stream that cannot hold these characters at all
            data = text.encode(encoding, "backslashreplace")
        sys.stdout.flush()
        sys.stdout.buffer.write(data)


def _abandon_stdout() -> None:
    """Point file descriptor 1 at the null device so the interpreter's final flush of
    what is still buffered does not fail a second time (as the Python docs advise
    for a closed pipe)."""
    try:
        null, out = os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno()
        if null != out:  # with fd 1 closed, the null device may already have taken its number
            os.dup2(null, out)
            os.close(null)
    except (OSError, ValueError, AttributeError):
        pass


def report_io_error(exc: OSError) -> int:
    """One line on stderr with the system's reason; the exit code for an I/O failure."""
    print(f"mha-explorer: error: {one_line(safe_files.describe(exc))}", file=sys.stderr)
    return EXIT_IO


def report_interrupt() -> int:
    """Ctrl+C: unfinished temporary files go, one line, exit 130."""
    from mha_explorer.core.system.interrupts import EXIT_INTERRUPTED

    safe_files.discard_unfinished()
    print("mha-explorer: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def one_line(text: str) -> str:
    """``text`` as one safe line: every character that is not printable (a newline, a
    tab, a terminal escape typed into a flag or a file name) written as its escape, so
    an error can neither break the line nor drive the terminal."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
