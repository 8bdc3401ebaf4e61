"""torch's shared libraries mapped into the process before torch is imported, without holding
the interpreter lock.

The window imports torch on a worker thread. Python's import loads torch's extension, and with
it libtorch (hundreds of MB to map and relocate), while holding the interpreter lock, so the GUI
thread could not run for about 170 ms of it (a stop of the window's event loop at every start).
libc's ``dlopen`` called through ctypes runs with the lock released; the import then finds the
libraries already loaded and only initialises them. It is a head start only: anywhere it does
not apply (not Linux, torch not installed, a library missing) the import loads them as usual.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import importlib.util
import os
import sys
import threading

# the library torch's extension links, which brings libtorch, libtorch_cpu and libc10 with it
PYTHON_BINDINGS = "libtorch_python.so"


def map_torch_libraries() -> bool:
    """Load torch's libraries with the interpreter lock released; whether it did. Safe to call
    more than once and after torch is imported (a loaded library is only counted again)."""
    if not sys.platform.startswith("linux") or "torch" in sys.modules:
        return False
    with contextlib.suppress(Exception):
        spec = importlib.util.find_spec("torch")  # finds the package without importing it
        if spec is None or not spec.submodule_search_locations:
            return False
        path = os.path.join(next(iter(spec.submodule_search_locations)), "lib", PYTHON_BINDINGS)
        if not os.path.isfile(path):
            return False
        # the flags Python opens extension modules with: the libraries end up as the import
        # alone would have left them
        with _MAPPING:
            return bool(_dlopen()(os.fsencode(path), sys.getdlopenflags()))
    return False


# held while a mapping runs: the process does not exit under it (libtorch's static constructors
# still running on one thread while exit ran its destructors crashed a window closed by Ctrl+C)
_MAPPING = threading.Lock()


@atexit.register
def _let_a_mapping_end() -> None:
    with _MAPPING:
        pass


@functools.cache
def _dlopen():
    """libc's dlopen as a foreign function, which lets go of the interpreter lock while it
    runs. Found once, on the thread that imports this module: finding it is itself a dlopen,
    made with the lock held, and on another thread it waited for a mapping in progress."""
    libc = ctypes.CDLL(None)
    libc.dlopen.argtypes = (ctypes.c_char_p, ctypes.c_int)
    libc.dlopen.restype = ctypes.c_void_p
    return libc.dlopen


if sys.platform.startswith("linux"):
    _dlopen()
