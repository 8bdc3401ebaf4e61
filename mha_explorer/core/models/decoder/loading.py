"""Loading a decoder from its converted copy: the weights and the tokenizer, both proved to be
the bytes the conversion writes.

The first load ever converts the package's GGUF file into the cache (seconds, with
progress); later ones read the converted copy. A copy found altered (a hash that is not
the pinned one) is converted again, once, and ``model.notice`` says so in one sentence.
"""

from __future__ import annotations

from mha_explorer.core.models.decoder.conversion import Conversion
from mha_explorer.core.models.decoder.converted import TOKENIZER_FILE, WEIGHTS_FILE, ConvertedFiles
from mha_explorer.core.models.decoder.model import DecoderModel
from mha_explorer.core.models.decoder.tokenizer import DecoderTokenizer, TokenizerFileError, load_tokenizer
from mha_explorer.core.models.decoder.weights_file import WeightsAltered, read_weights
from mha_explorer.core.models.description import ModelDescription
from mha_explorer.core.models.progress import Cancel, Progress, Share


def _read_both(d: ModelDescription, found: ConvertedFiles, progress: Share, cancel: Cancel | None):
    """The tokenizer and the weights, both checked against the manifest. The weights' hash runs
    on a thread while the tokenizer is read (which holds the GIL for a while: 1.5 s for Gemma's
    262,144 pieces)."""
    pending = read_weights(found, d.name, progress.part(0.0, 0.4), cancel)
    progress(0.4, f"loading {d.name}: its {d.vocab_size:,}-piece vocabulary")
    tok = load_tokenizer(found.tokenizer, found.tokenizer_sha256)
    progress(0.95, f"loading {d.name}: checking the weights' SHA-256")
    return tok, pending.verified(cancel)


def load(d: ModelDescription, conversion: Conversion, progress: Progress | None,
         cancel: Cancel | None) -> DecoderModel:
    """The model read from its converted copy (converting first when needed); the model's
    error (one line with the fix) when the copy keeps changing, Cancelled on cancel."""
    share = Share(progress)
    converting = share.part(0.0, 0.8)
    ready, _ = conversion.usable(conversion.record.folder())
    found = conversion.prepare(None if ready is not None else converting, cancel)
    try:
        tok, tensors = _read_both(d, found, share if ready is not None else share.part(0.8, 1.0), cancel)
    except (WeightsAltered, TokenizerFileError) as err:
        which = TOKENIZER_FILE if isinstance(err, TokenizerFileError) else WEIGHTS_FILE
        found = conversion.prepare(converting, cancel, rebuild=f"was altered ({which}: {err})")
        try:
            tok, tensors = _read_both(d, found, share.part(0.8, 1.0), cancel)
        except (WeightsAltered, TokenizerFileError) as again:
            raise conversion.error(f"the converted copy in {found.folder} changed again while "
                                   f"loading ({again}); close other programs using it") from None
    if progress is not None:
        progress(1.0, f"{d.name} loaded")
    return DecoderModel(d, tensors, DecoderTokenizer(tok, d.decoder), found.notice)
