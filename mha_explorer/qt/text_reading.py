"""A config whose text must first be read as a trained model's tokens, read on the jobs thread.

Choosing a trained model, or typing a sentence while one is chosen, gives a config whose tokens
are still words; the model's tokenizer turns them into its pieces. That tokenizer is built on
first use (Gemma 3's from its GGUF file, converted into the cache: seconds to tens of seconds),
so the reading never runs on the GUI thread: the config waits as a ``Reading`` while the jobs
thread reads, with its progress and a Cancel, and becomes the config on screen once read. An
edit that comes meanwhile is made on the waiting config (a newer reading replaces the older);
Cancel, or a choice of other weights, leaves the config in use as it was. The first reading of
a model whose files are converted makes (or finds) that copy in a process of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.config.edits import apply_edits
from mha_explorer.core.errors import ConfigError
from mha_explorer.core.models import runtime
from mha_explorer.core.models.catalog import model_named
from mha_explorer.core.models.description import ModelDescription
from mha_explorer.core.system.elsewhere import run_elsewhere
from mha_explorer.qt.jobs import Job, JobDone, JobFailed, JobKind, JobProgress

if TYPE_CHECKING:
    from mha_explorer.qt.jobs import Jobs


@dataclass(frozen=True)
class Reading:
    """A config waiting for its words to be read as its model's pieces."""

    config: MHAConfig  # as asked for, its tokens still words
    job: int  # the jobs thread's id for the reading

    @property
    def model(self) -> ModelDescription:
        return model_named(self.config.weights)


def needs_reading(cfg: MHAConfig) -> bool:
    """A trained model's config whose tokens are not yet the model's own pieces."""
    model = model_named(cfg.weights)
    return model is not None and not runtime.owns(model, cfg.tokens)


def read_as_pieces(cfg: MHAConfig, convert_first: bool = False, *, cancel=None, progress=None) -> MHAConfig:
    """``cfg`` with its words read as its model's pieces (T follows); ConfigError when the text
    does not fit the model or its package is missing. On the jobs thread. ``convert_first``: the
    model's converted copy is made (or found) first in a process of its own, its progress and
    Cancel forwarded: building a vocabulary holds the interpreter lock for seconds, which on any
    thread of this process would stop the event loop."""
    model = model_named(cfg.weights)
    ok, why = runtime.is_available(model)
    if not ok:
        raise ConfigError("weights", why)
    if convert_first:
        run_elsewhere(f"{runtime.__name__}:convert", (model.key,), progress=progress, cancel=cancel)
    pieces = runtime.as_pieces(model, cfg.tokens)
    return apply_edits(cfg, {"tokens": pieces, "seq": len(pieces)})


class ReadingMixin:
    """For Controller: ``reading`` (the config waiting, or None), ``cancel_reading()``; emits
    ``reading_changed(Reading | None)``, ``reading_progressed(fraction, words)`` and
    ``reading_failed(message)``; uses ``jobs``, ``set_config`` and ``_config``."""

    jobs: Jobs
    _reading: Reading | None = None
    _converted: frozenset[str] = frozenset()  # models whose copy a reading here has made or found

    @property
    def reading(self) -> Reading | None:
        return self._reading

    def _edit_base(self) -> MHAConfig:
        """What an edit is made on: the config waiting to be read, else the one in use."""
        return self._reading.config if self._reading is not None else self._config  # type: ignore[attr-defined]

    def _read(self, cfg: MHAConfig) -> bool:
        """Read ``cfg``'s text on the jobs thread; True (it waits). Without a jobs thread (a
        controller never started: the command line's export) it is read here, at once."""
        if not self.jobs.is_running():
            try:
                cfg = read_as_pieces(cfg)
            except ConfigError as err:
                self.reading_failed.emit(err.message)  # type: ignore[attr-defined]
                return False
            return self.set_config(cfg)  # type: ignore[attr-defined]
        key = cfg.weights
        first = key not in self._converted and runtime.converts(model_named(key))
        job = self.jobs.submit(JobKind.reading, read_as_pieces, cfg, first, cancellable=True)
        self._reading = Reading(cfg, job)
        self.reading_changed.emit(self._reading)  # type: ignore[attr-defined]
        return True

    def cancel_reading(self) -> None:
        """Stop the reading under way (its answer is dropped); the config in use stays."""
        if self._reading is not None:
            self.jobs.cancel(JobKind.reading)  # ends it at once, through _on_reading_dropped

    def _on_reading_dropped(self, kind: str) -> None:
        if kind == JobKind.reading and self._reading is not None:
            self._reading = None
            self.reading_changed.emit(None)  # type: ignore[attr-defined]

    def _reading_answer(self, answer: JobDone | JobFailed | Job) -> bool:
        """Handle the reading's answer (done, failed or cancelled); False for other jobs."""
        if answer.kind != JobKind.reading:
            return False
        if self._reading is None or answer.id != self._reading.job:
            return True  # an older reading's late word
        self._reading = None
        if isinstance(answer, JobDone):
            self._converted = self._converted | {answer.result.weights}
            self.set_config(answer.result)  # type: ignore[attr-defined]
            self.reading_changed.emit(None)  # type: ignore[attr-defined]
        else:
            self.reading_changed.emit(None)  # type: ignore[attr-defined]
            if isinstance(answer, JobFailed):
                self.reading_failed.emit(answer.message)  # type: ignore[attr-defined]
        return True

    def _reading_progress(self, progress: JobProgress) -> None:
        reading = self._reading
        if progress.kind == JobKind.reading and reading is not None and progress.id == reading.job:
            self.reading_progressed.emit(progress.fraction, progress.text)  # type: ignore[attr-defined]
