"""The move from one stage's picture to the next.

Both pictures are already built; the transition only interpolates between
them. An item whose key is in both slides (and stretches) from its old place to
its new one; a new item with an ``origin`` grows out of that item; anything
else fades in, and what the old picture had alone fades out. One
QVariantAnimation drives every item, so there is one thing to start, stop and
test, and nothing is recomputed per frame.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QEasingCurve, QObject, QPointF, QVariantAnimation, Signal
from PySide6.QtWidgets import QGraphicsItem, QGraphicsScene

BASE_DURATION_MS = 450  # at speed 1.0, under half of the controller's 1 s step
MIN_DURATION_MS, MAX_DURATION_MS = 150, 1800


def duration_for(speed: float) -> int:
    return int(min(MAX_DURATION_MS, max(MIN_DURATION_MS, BASE_DURATION_MS / max(speed, 0.1))))


def _window(t: float, start: float, end: float) -> float:
    return min(1.0, max(0.0, (t - start) / (end - start)))


@dataclass
class _Track:
    item: QGraphicsItem
    pos0: QPointF
    pos1: QPointF
    size0: tuple[float, float] | None
    size1: tuple[float, float] | None
    fade: tuple[float, float, float, float] | None  # start, end, from, to

    def apply(self, t: float) -> None:
        self.item.setPos(self.pos0 + (self.pos1 - self.pos0) * t)
        if self.size0 is not None:
            (w0, h0), (w1, h1) = self.size0, self.size1
            self.item.set_size(w0 + (w1 - w0) * t, h0 + (h1 - h0) * t)
        if self.fade is not None:
            start, end, a, b = self.fade
            self.item.setOpacity(a + (b - a) * _window(t, start, end))


def _sizable(item: QGraphicsItem) -> bool:
    return hasattr(item, "set_size")


class Transition(QObject):
    """Animates ``scene`` from the items of one stage to those of the next."""

    finished = Signal()

    def __init__(self, scene: QGraphicsScene, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._scene = scene
        self._tracks: list[_Track] = []
        self._leaving: list[QGraphicsItem] = []
        self._animation = QVariantAnimation(self)
        self._animation.setStartValue(0.0)
        self._animation.setEndValue(1.0)
        self._animation.setEasingCurve(QEasingCurve.Type.InOutCubic)
        self._animation.valueChanged.connect(self._step)
        self._animation.finished.connect(self._done)

    @property
    def animation(self) -> QVariantAnimation:
        return self._animation

    def is_running(self) -> bool:
        return self._animation.state() == QVariantAnimation.State.Running

    def run(self, old: list[QGraphicsItem], new: list[QGraphicsItem], duration_ms: int) -> None:
        """Put ``new`` in the scene and animate from ``old``; the old items leave
        the scene when the animation ends (or at once for those replaced)."""
        self.finish()
        old_by_key = {item.key: item for item in old}
        new_by_key = {item.key: item for item in new}
        taken: set[str] = set()
        for item in new:
            self._tracks.append(self._track(item, old_by_key, new_by_key, taken))
            self._scene.addItem(item)
        for item in old:
            if item.key in taken:
                self._scene.removeItem(item)
            else:  # leaves: fades out where it is during the first half
                self._tracks.append(_Track(item, item.pos(), item.pos(), None, None,
                                           (0.0, 0.5, item.opacity(), 0.0)))
                self._leaving.append(item)
        self._step(0.0)
        self._animation.setDuration(duration_ms)
        self._animation.start()

    def _track(self, item, old_by_key, new_by_key, taken: set[str]) -> _Track:
        end_pos = item.pos()
        end_size = item.size() if _sizable(item) else None
        same = old_by_key.get(item.key)
        if same is not None:
            start_size = same.size() if end_size is not None and _sizable(same) else end_size
            if same.content == item.content:
                taken.add(item.key)  # the old item is replaced by this one at once
                return _Track(item, same.pos(), end_pos, start_size, end_size, None)
            # the content changed: slide while the new one fades in over the old one
            return _Track(item, same.pos(), end_pos, start_size, end_size, (0.0, 0.6, 0.0, 1.0))
        source = old_by_key.get(item.origin) or new_by_key.get(item.origin)
        if source is not None:
            start_size = end_size
            if end_size is not None and _sizable(source):
                start_size = source.size()
            return _Track(item, source.pos(), end_pos, start_size, end_size, (0.0, 0.35, 0.0, 1.0))
        return _Track(item, end_pos, end_pos, None, None, (0.4, 1.0, 0.0, 1.0))

    def _step(self, t) -> None:
        for track in self._tracks:
            track.apply(float(t))

    def finish(self) -> None:
        """Jump to the end state (used when a new stage arrives mid-animation)."""
        if self.is_running():
            self._animation.stop()
            self._step(1.0)
            self._done()

    def _done(self) -> None:
        for item in self._leaving:
            if item.scene() is self._scene:
                self._scene.removeItem(item)
        for track in self._tracks:
            if track.item not in self._leaving:
                track.apply(1.0)
        self._tracks, self._leaving = [], []
        self.finished.emit()
