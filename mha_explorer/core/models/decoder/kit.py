"""A decoder's description joined to its own package and to the shared decoder core (no torch).

A decoder's package (``ModelDescription.home``) holds only what is its own: ``files``
(``is_available``: are its package and the libraries installed, cheaply) and ``convert``
(``CONVERSION``: where its GGUF file is, what it must say, the tensors' names, its
tokenizer). Everything else (the converted copy, loading, the forward pass, generation, the
report the command line and the Layers dock read, the pieces of the stage view) is the
shared core's, reached through the model's kit: ``kit_for(model)``. The loaded model is
kept once per process, in its kit.
"""

from __future__ import annotations

import functools
import importlib
import threading
from types import ModuleType
from typing import TYPE_CHECKING

from mha_explorer.core.models.decoder.conversion import Conversion
from mha_explorer.core.models.decoder.converted import TOKENIZER_FILE
from mha_explorer.core.models.decoder.tokenizer import DecoderTokenizer, TokenizerFileError, load_tokenizer
from mha_explorer.core.models.description import ModelDescription
from mha_explorer.core.models.progress import Cancel, Progress

if TYPE_CHECKING:
    from mha_explorer.core.models.decoder.model import DecoderModel
    from mha_explorer.core.models.decoder.pieces import DecoderPieces
    from mha_explorer.core.models.decoder.report import DecoderReport


class DecoderKit:
    """One decoder's files, conversion, tokenizer and (once loaded) model."""

    def __init__(self, description: ModelDescription):
        if description.decoder is None:
            raise ValueError(f"{description.name} is not a decoder")
        self.description = description
        self._model: DecoderModel | None = None
        self._model_lock = threading.Lock()

    @functools.cached_property
    def files(self) -> ModuleType:
        return importlib.import_module(f"{self.description.home}.files")

    @functools.cached_property
    def conversion(self) -> Conversion:
        return importlib.import_module(f"{self.description.home}.convert").CONVERSION

    def check_available(self) -> None:
        """The model's error (one line, with the fix) unless its package and libraries are there."""
        ok, message = self.files.is_available()
        if not ok:
            raise self.conversion.error(message)

    def tokenizer(self, progress: Progress | None = None, cancel: Cancel | None = None) -> DecoderTokenizer:
        """The tokenizer alone, without the model's weights (the package's file is converted first
        if it never was); a tokenizer.json altered since the conversion is converted again."""
        self.check_available()
        found = self.conversion.prepare(progress, cancel)
        layout = self.description.decoder
        try:
            return DecoderTokenizer(load_tokenizer(found.tokenizer, found.tokenizer_sha256), layout)
        except TokenizerFileError as err:
            altered = f"was altered ({TOKENIZER_FILE}: {err})"
            found = self.conversion.prepare(progress, cancel, rebuild=altered)
            return DecoderTokenizer(load_tokenizer(found.tokenizer, found.tokenizer_sha256), layout)

    def load_model(self, progress: Progress | None = None, cancel: Cancel | None = None) -> DecoderModel:
        """The model and its tokenizer, loaded once per process; later calls return the same one
        (see ``loading.load`` for what a first call does). Its package is looked for every time
        (milliseconds), so a package removed meanwhile is said, not used."""
        self.check_available()
        with self._model_lock:
            if self._model is None:
                self._model = self.load_fresh(progress, cancel)
            elif progress is not None:
                progress(1.0, f"{self.description.name} loaded")
            return self._model

    def load_fresh(self, progress: Progress | None = None, cancel: Cancel | None = None) -> DecoderModel:
        """The model read from the converted copy again, kept nowhere."""
        self.check_available()
        from mha_explorer.core.models.decoder.loading import load  # torch, once the files are there

        return load(self.description, self.conversion, progress, cancel)

    @functools.cached_property
    def report(self) -> DecoderReport:
        from mha_explorer.core.models.decoder.report import DecoderReport

        return DecoderReport(self.description, self.load_model)

    @functools.cached_property
    def pieces(self) -> DecoderPieces:
        from mha_explorer.core.models.decoder.pieces import DecoderPieces

        return DecoderPieces(self.description, self.tokenizer)


_kits: dict[str, DecoderKit] = {}
_kits_lock = threading.Lock()


def kit_for(description: ModelDescription) -> DecoderKit:
    """The one kit of this decoder in this process."""
    with _kits_lock:
        if description.key not in _kits:
            _kits[description.key] = DecoderKit(description)
        return _kits[description.key]
