"""The controller's playback: stepping through the stages on a timer at a chosen speed."""

from __future__ import annotations

SPEEDS = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0)  # stages per second
BASE_STEP_MS = 1000  # one stage a second at 1×


class PlaybackMixin:
    """For Controller: reads ``_play`` (its QTimer), ``_speed``, the stage methods and the
    ``playing_changed`` and ``speed_changed`` signals."""

    @property
    def playing(self) -> bool:
        return self._play.isActive()

    @property
    def speed(self) -> float:
        return self._speed

    @property
    def step_interval_ms(self) -> int:
        return int(BASE_STEP_MS / self._speed)

    def set_speed(self, speed: float) -> None:
        speed = min(max(float(speed), SPEEDS[0]), SPEEDS[-1])
        if speed != self._speed:
            self._speed = speed
            self._play.setInterval(self.step_interval_ms)
            self.speed_changed.emit(speed)

    def play(self) -> None:
        if self.playing:
            return
        if self._at_last_stage():
            self.set_stage(0)  # play from the start after the end
        self._play.start(self.step_interval_ms)
        self.playing_changed.emit(True)

    def pause(self) -> None:
        if self.playing:
            self._play.stop()
            self.playing_changed.emit(False)

    def toggle_play(self) -> None:
        self.pause() if self.playing else self.play()

    def _at_last_stage(self) -> bool:
        return self.stage_index >= len(self._plan.stage_ids) - 1

    def _advance(self) -> None:
        if self._at_last_stage():
            self.pause()
        else:
            self.next_stage()
            if self._at_last_stage():
                self.pause()

