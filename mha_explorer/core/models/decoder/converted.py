"""A decoder's converted copy in the app's cache: its folder, its manifest and what each file
must hash to (no torch).

A GGUF file is converted once into float32 ``model.safetensors`` and ``tokenizer.json`` in
a folder named for the model, the source file's SHA-256 and the converter's version, so
another file or another converter never reads an old copy. ``manifest.json``, written last,
records each file's size and SHA-256; without it the copy does not count.

The conversion makes the same bytes every time, so the SHA-256 of each file it writes is
pinned in the code, per converter version (``CacheRecord.pinned``). A manifest recording
any other hash describes files this converter did not write (edited, with their new hash
written in), and the copy is made again; loading hashes the files themselves against the
same pins.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mha_explorer.core.errors import ConfigError
from mha_explorer.core.models.cache_files import cache_root
from mha_explorer.core.models.description import ModelDescription
from mha_explorer.core.system.safe_files import read_regular

WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
MANIFEST_FILE = "manifest.json"
MANIFEST_LIMIT = 1 << 20  # a manifest is a few hundred bytes; a bigger one is not ours
OUTPUTS = (WEIGHTS_FILE, TOKENIZER_FILE)


class ModelFilesError(ConfigError):
    """A trained decoder cannot be used: a missing package or library, another version,
    a cache that cannot be written, files the conversion did not make."""

    def __init__(self, message: str):
        super().__init__("weights", message)


@dataclass(frozen=True)
class ConvertedFiles:
    """The converted copy in the cache and the SHA-256 each file must still have."""

    folder: Path
    weights_sha256: str
    weights_bytes: int
    tokenizer_sha256: str
    tokenizer_bytes: int
    notice: str | None = None  # one sentence when the copy had to be made again

    @property
    def weights(self) -> Path:
        return self.folder / WEIGHTS_FILE

    @property
    def tokenizer(self) -> Path:
        return self.folder / TOKENIZER_FILE

    def sha256(self, name: str) -> str:
        return {WEIGHTS_FILE: self.weights_sha256, TOKENIZER_FILE: self.tokenizer_sha256}[name]


@dataclass(frozen=True)
class CacheRecord:
    """Whose converted copy a folder holds: the model, the source file and the converter
    version, and the SHA-256 of every file that version writes."""

    model: ModelDescription
    source_sha256: str
    version: int
    pinned: Mapping[str, str]  # file name -> the SHA-256 this converter version writes

    def folder(self) -> Path:
        """The copy's folder in the cache (see the module's docstring)."""
        return cache_root() / f"{self.model.key}-{self.source_sha256[:16]}-c{self.version}"

    def read_manifest(self, folder: Path) -> tuple[ConvertedFiles | None, str | None]:
        """(the converted files, None) when the manifest is there and every file has its recorded
        size; (None, None) when nothing was converted yet; (None, what is wrong) otherwise."""
        path = folder / MANIFEST_FILE
        if not path.exists() and not path.is_symlink():
            return None, None
        try:
            # read without blocking: a pipe put there would hold the window's start for ever
            data = json.loads(read_regular(path, MANIFEST_LIMIT).decode("utf-8"))
            if (data["source_sha256"] != self.source_sha256 or data["converter"] != self.version
                    or data["model"] != self.model.key):
                return None, "belongs to another file or converter"
            files = data["files"]
            weights, tokenizer = files[WEIGHTS_FILE], files[TOKENIZER_FILE]
            found = ConvertedFiles(folder, str(weights["sha256"]), int(weights["bytes"]),
                                   str(tokenizer["sha256"]), int(tokenizer["bytes"]))
        except OSError as exc:  # a pipe, a link, a giant: named, with what it is
            return None, f"has an unreadable {MANIFEST_FILE} ({exc.strerror or exc})"
        except (ValueError, KeyError, TypeError, RecursionError):  # nested deep: not ours either
            return None, f"has an unreadable {MANIFEST_FILE} (not the record a conversion writes)"
        for file, size in ((found.weights, found.weights_bytes), (found.tokenizer, found.tokenizer_bytes)):
            if file.is_symlink() or not file.is_file():
                return None, f"lacks {file.name}"
            if file.stat().st_size != size:
                return None, f"has a {file.name} of another size (altered or cut short)"
        return found, None

    def forged(self, found: ConvertedFiles) -> str | None:
        """What is wrong when the manifest records a file this converter never writes."""
        for name in OUTPUTS:
            if found.sha256(name) != self.pinned[name]:
                return (f"records a {name} this converter never writes (SHA-256 {found.sha256(name)[:12]}…, "
                        f"expected {self.pinned[name][:12]}…): it was altered")
        return None

    def notice(self, folder: Path, problem: str) -> str:
        return f"The converted copy of {self.model.name} in {folder} {problem}; converting it again."
