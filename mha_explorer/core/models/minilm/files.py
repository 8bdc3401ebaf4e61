"""Finding the installed checkpoint and proving it is the pinned one (no torch).

The files are located through the package's install record and import spec;
the package itself (and sentence-transformers, which it wraps) is never
imported. ``is_available`` is cheap enough for the window to ask at start-up;
every file the app reads is pinned by its SHA-256: the weights are hashed once per
process before they are read, the small files (tokenizer, config) are hashed in the
very bytes that are then used, so a vocabulary edited in place (two words swapped)
is refused, not shown as maps labelled with the wrong words.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import threading
from collections.abc import Callable
from pathlib import Path

from mha_explorer.core.errors import ConfigError, check_cancel
from mha_explorer.core.models.minilm import info

_HASH_CHUNK = 4 << 20  # bytes read per step; progress is reported after each
_verified: set[tuple[str, int, int]] = set()  # (path, size, mtime_ns) already hashed
_verify_lock = threading.Lock()


class TrainedWeightsError(ConfigError):
    """The trained weights cannot be used: missing extra, wrong version, altered file."""

    def __init__(self, message: str):
        super().__init__("weights", message)


def _missing(what: str) -> TrainedWeightsError:
    return TrainedWeightsError(f"{info.DISPLAY_NAME} needs {what}; install the optional extra: "
                               f"{info.INSTALL_HINT}")


def _package_root() -> Path:
    """The installed package's folder, from its install record or its import spec."""
    try:
        dist = importlib.metadata.distribution(info.DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise _missing(f"the package {info.DISTRIBUTION}=={info.DISTRIBUTION_VERSION}") from None
    if dist.version != info.DISTRIBUTION_VERSION:
        raise TrainedWeightsError(
            f"{info.DISTRIBUTION} {dist.version} is installed but the app is pinned to "
            f"{info.DISTRIBUTION_VERSION}; run: {info.INSTALL_HINT}")
    root = Path(str(dist.locate_file(info.PACKAGE_DIR)))
    if root.is_dir():
        return root
    spec = importlib.util.find_spec(info.PACKAGE_DIR)  # finds, does not import, a top-level package
    if spec is None or not spec.submodule_search_locations:
        raise _missing(f"the files of {info.DISTRIBUTION}")
    return Path(next(iter(spec.submodule_search_locations)))


def model_dir() -> Path:
    """The folder holding model.safetensors, config.json and tokenizer.json.

    Raises TrainedWeightsError (one line, with the fix) when anything is missing.
    """
    folder = _package_root() / info.MODEL_SUBDIR
    for name in (info.WEIGHTS_FILE, info.TOKENIZER_FILE, info.CONFIG_FILE):
        if not (folder / name).is_file():
            raise TrainedWeightsError(f"{folder / name} is missing; reinstall: {info.INSTALL_HINT}")
    size = (folder / info.WEIGHTS_FILE).stat().st_size
    if size != info.WEIGHTS_BYTES:
        raise TrainedWeightsError(
            f"{folder / info.WEIGHTS_FILE} has {size:,} bytes, not the pinned {info.WEIGHTS_BYTES:,}; "
            f"reinstall: {info.INSTALL_HINT}")
    return folder


def is_available() -> tuple[bool, str]:
    """(True, where) when the extra is installed, else (False, how to install it).

    Does not hash or read the weights, so it costs milliseconds.
    """
    for module in ("safetensors", "tokenizers"):
        if importlib.util.find_spec(module) is None:
            return False, _missing(f"the '{module}' library").message
    try:
        folder = model_dir()
    except TrainedWeightsError as err:
        return False, err.message
    return True, f"{info.DISPLAY_NAME} found in {folder}"


def sha256_of(path: Path, progress: Callable[[float], None] | None = None,
              cancel: Callable[[], bool] | None = None) -> str:
    """The file's SHA-256, read 4 MiB at a time; Cancelled between reads when ``cancel`` says so."""
    digest = hashlib.sha256()
    total = max(path.stat().st_size, 1)
    done = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            check_cancel(cancel)
            digest.update(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done / total)
    return digest.hexdigest()


def _altered(path: Path, what: str, actual: str, expected: str) -> TrainedWeightsError:
    return TrainedWeightsError(
        f"{path} is not the pinned {what} (SHA-256 {actual[:12]}…, expected {expected[:12]}…); "
        f"it was altered or replaced, reinstall: {info.INSTALL_HINT}")


SMALL_FILE_LIMIT = 16 << 20  # far above the tokenizer's half megabyte


def read_verified(path: Path, expected: str, what: str) -> bytes:
    """The bytes of a small pinned file (the tokenizer, the config), refused in one sentence
    naming the file unless they hash to ``expected``; the bytes hashed are the bytes used."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(SMALL_FILE_LIMIT + 1)
    except OSError as exc:
        raise TrainedWeightsError(f"{path} could not be read ({exc.strerror or exc}); "
                                  f"reinstall: {info.INSTALL_HINT}") from None
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise _altered(path, what, actual, expected)
    return data


def verify_weights(path: Path, expected: str = info.WEIGHTS_SHA256,
                   progress: Callable[[float], None] | None = None,
                   cancel: Callable[[], bool] | None = None) -> None:
    """Raise TrainedWeightsError unless ``path`` hashes to ``expected`` (once per file state)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _verify_lock:
        if key in _verified:
            return
        actual = sha256_of(path, progress, cancel)
        if actual != expected:
            raise _altered(path, "checkpoint", actual, expected)
        _verified.add(key)
