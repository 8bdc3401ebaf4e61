"""An export from the window that never stops it: the pictures drawn a piece per event-loop turn,
encoded and written on the jobs thread, with progress and Cancel in the status bar.

Drawing a view needs the GUI thread, and each piece here is short: making the stage view's
offscreen page, then the heads' (tens of ms each), showing a stage (its views redraw over the
next turns, as the window's do), drawing one page into an image or an SVG (under 15 ms).
Encoding a PNG (50-60 ms for 1920×1080) and writing a file (flushed to disk) are not drawing:
the jobs thread does them, from an outbox the GUI thread fills (a QImage may cross threads),
and then the tables. The window's export had done all of it in one turn: 0.6 s of a frozen
window on two busy cores.

``ExportRun.start()``; ``done``, ``written`` (the files), ``problem`` (one line, or None),
``ended`` (a signal, once), ``cancel()``.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QImage

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.errors import check_cancel
from mha_explorer.core.plan.build import build_plan
from mha_explorer.core.specs.export import check_folder
from mha_explorer.core.system import safe_files
from mha_explorer.core.text.tables import write_tables
from mha_explorer.qt.jobs import Job, JobDone, JobFailed, JobKind, Jobs
from mha_explorer.qt.shell.export import (
    ExportOptions,
    StageExporter,
    encoded_png,
    export_problem,
    render_image,
    svg_bytes,
)

TURN_MS = 1  # between two pieces: the event loop answers input and paints in between
WAITING_MAX = 2  # pictures drawn and not yet written: the drawing waits for the writing
LOOK_S = 0.1  # how often the writer, waiting for a picture, hears Cancel


class Outbox:
    """Pictures on their way from the GUI thread to the writer: ``put(path, image or bytes)``,
    ``close()`` once every one is in; the writer ``take``s them in order."""

    def __init__(self) -> None:
        self._items: deque[tuple[Path, QImage | bytes]] = deque()
        self._ready = threading.Condition()
        self._closed = False

    def put(self, path: Path, picture: QImage | bytes) -> None:
        with self._ready:
            self._items.append((path, picture))
            self._ready.notify()

    def close(self) -> None:
        with self._ready:
            self._closed = True
            self._ready.notify()

    @property
    def waiting(self) -> int:
        with self._ready:
            return len(self._items)

    def take(self, cancel) -> tuple[Path, QImage | bytes] | None:
        """The next picture; None once closed and empty; Cancelled when ``cancel`` says so."""
        with self._ready:
            while not self._items and not self._closed:
                check_cancel(cancel)
                self._ready.wait(LOOK_S)
            check_cancel(cancel)
            return self._items.popleft() if self._items else None


@dataclass(frozen=True)
class Written:
    """What the writer did: the files written, and the problem that stopped it (None: none)."""

    files: tuple[Path, ...]
    problem: str | None = None


def write_pictures(outbox: Outbox, count: int, folder: Path, tables: MHAConfig | None, *,
                   cancel=None, progress=None) -> Written:
    """On the jobs thread: each picture of ``outbox`` encoded (a PNG's image) and written whole,
    then ``tables``' tables; a file that cannot be written ends it, its problem said."""
    files: list[Path] = []
    try:
        while (item := outbox.take(cancel)) is not None:
            path, picture = item
            data = encoded_png(picture, path) if isinstance(picture, QImage) else picture
            files.append(safe_files.write_bytes(path, data))
            if progress is not None:
                progress(len(files) / (count + (tables is not None)),
                         f"exporting: {path.name} written ({len(files)} of {count} pictures)…")
        if tables is not None:
            check_cancel(cancel)
            files += [folder / name for name in write_tables(build_plan(tables), folder)]
    except OSError as exc:
        return Written(tuple(files), export_problem(exc))
    return Written(tuple(files))


class ExportRun(QObject):
    """The window's export of ``stages`` of its config and trace (see the module's doc)."""

    ended = Signal()

    def __init__(self, jobs: Jobs, config: MHAConfig, trace, stages, folder, *, batch_index: int = 0,
                 head: int = 0, options: ExportOptions | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._jobs = jobs
        self._config, self._trace = config, trace
        self._stages = tuple(stages)
        self._folder = folder
        self._batch_index, self._head = batch_index, head
        self.options = options if options is not None else ExportOptions()
        self.done = False
        self.written: list[Path] = []
        self.problem: str | None = None
        self._outbox = Outbox()
        self._exporter: StageExporter | None = None
        self._pieces: Iterator[None] | None = None
        self._job = 0
        self._listening = False
        self._timer = QTimer(self, singleShot=True, interval=TURN_MS)
        self._timer.timeout.connect(self._next)

    def start(self) -> None:
        try:
            folder = check_folder(self._folder)
            unknown = [s for s in self._stages if s not in build_plan(self._config).stage_ids]
            if unknown:
                raise ValueError(f"no stage {unknown[0]!r} in this configuration")
            folder.mkdir(parents=True, exist_ok=True)
        except (OSError, ValueError) as exc:
            self._end(problem=export_problem(exc))
            return
        self._folder = folder
        trace = self._trace if self._trace is not None and self._trace.config == self._config else None
        self._exporter = StageExporter(self._config, trace, batch_index=self._batch_index, head=self._head,
                                       options=self.options, building=True)
        count = 2 * len(self.options.formats) * len(self._stages)
        self._listen(True)
        self._job = self._jobs.submit(JobKind.export, write_pictures, self._outbox, count, folder,
                                      self._config if self.options.tables else None, cancellable=True)
        self._pieces = self._draw()
        self._timer.start()

    def cancel(self) -> None:
        """Stop now: what was written stays, whole."""
        if not self.done:
            self._jobs.cancel(JobKind.export)  # through _on_dropped

    # the GUI thread's pieces ----------------------------------------------------------------
    def _draw(self) -> Iterator[None]:
        exporter = self._exporter
        yield from exporter.build()
        for stage in self._stages:
            exporter.show(stage)
            while not exporter.drawn:  # its views redraw over turns, as the window's do
                yield
            for path, page, title in exporter.pictures(stage, self._folder):
                while self._outbox.waiting >= WAITING_MAX:  # the writer is behind: memory stays small
                    yield
                drawn = render_image(page) if path.suffix == ".png" else svg_bytes(page, title)
                self._outbox.put(path, drawn)
                yield
        self._outbox.close()

    def _next(self) -> None:
        if self._pieces is None:
            return
        try:
            next(self._pieces)
        except StopIteration:
            self._pieces = None
            self._release()
            return
        except OSError as exc:  # an SVG the generator could not finish
            self._jobs.cancel(JobKind.export)
            self._end(problem=export_problem(exc))
            return
        self._timer.start()

    # the writer's answer -----------------------------------------------------------------------
    def _on_job(self, answer: JobDone | JobFailed | Job) -> None:
        if answer.kind != JobKind.export or answer.id != self._job or self.done:
            return
        if isinstance(answer, JobDone):
            self._end(answer.result.files, answer.result.problem)
        elif isinstance(answer, JobFailed):
            self._end(problem=answer.message)
        else:
            self._end(problem="cancelled")

    def _on_dropped(self, kind: str) -> None:
        if kind == JobKind.export and not self.done:
            self._outbox.close()
            self._end(problem="cancelled")

    def _end(self, files=(), problem: str | None = None) -> None:
        self.done = True
        self.written, self.problem = list(files), problem
        self._pieces = None
        self._timer.stop()
        self._release()
        self._listen(False)
        self.ended.emit()

    def _listen(self, on: bool) -> None:
        """Hear the jobs' answers (while the writer may answer)."""
        if on == self._listening:
            return
        self._listening = on
        for signal, slot in ((self._jobs.done, self._on_job), (self._jobs.failed, self._on_job),
                             (self._jobs.cancelled, self._on_job), (self._jobs.dropped, self._on_dropped)):
            (signal.connect if on else signal.disconnect)(slot)

    def _release(self) -> None:
        if self._exporter is not None:
            self._exporter.close()
            self._exporter = None

