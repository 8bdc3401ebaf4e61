"""Preferences kept between runs (window layout, last config, theme, motion).

The file location is injectable (``--settings FILE`` or MHA_EXPLORER_SETTINGS),
so tests never touch the user's own preferences. A corrupt or foreign file is
ignored with a warning rather than breaking the start.
"""

from __future__ import annotations

import json
import logging
import os

from PySide6.QtCore import QByteArray, QSettings

from ..core.config import ConfigError, MHAConfig

log = logging.getLogger(__name__)
SETTINGS_ENV = "MHA_EXPLORER_SETTINGS"
FORMAT_VERSION = 1


class Preferences:
    def __init__(self, path: str | None = None) -> None:
        path = path or os.environ.get(SETTINGS_ENV)
        if path:
            self._qs = QSettings(path, QSettings.Format.IniFormat)
        else:
            self._qs = QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope,
                                 "MHA Explorer", "mha-explorer")
        self.warnings: list[str] = []
        if self._qs.status() != QSettings.Status.NoError:
            self._discard(f"the settings file {self._qs.fileName()} could not be read; using defaults")
        elif self._qs.contains("version") and self._int("version") != FORMAT_VERSION:
            self._discard(f"the settings file {self._qs.fileName()} is from another version; "
                          "using defaults")

    @property
    def file_name(self) -> str:
        return self._qs.fileName()

    def _discard(self, message: str) -> None:
        log.warning(message)
        self.warnings.append(message)
        self._qs.clear()

    def _int(self, key: str) -> int | None:
        try:
            return int(self._qs.value(key))
        except (TypeError, ValueError):
            return None

    # the last config -----------------------------------------------------------
    def load_config(self) -> MHAConfig | None:
        raw = self._qs.value("config")
        if raw is None:
            return None
        try:
            data = json.loads(str(raw))
            if not isinstance(data, dict):
                raise ValueError("not a mapping")
            return MHAConfig.from_dict(data)
        except (ValueError, TypeError, ConfigError) as exc:
            message = f"ignored the saved configuration ({exc}); using defaults"
            log.warning(message)
            self.warnings.append(message)
            return None

    def save_config(self, cfg: MHAConfig) -> None:
        self._qs.setValue("version", FORMAT_VERSION)
        self._qs.setValue("config", json.dumps(cfg.to_dict()))

    # window layout ---------------------------------------------------------------
    def load_layout(self) -> tuple[QByteArray | None, QByteArray | None]:
        geometry, state = self._qs.value("window/geometry"), self._qs.value("window/state")
        ok = lambda v: v if isinstance(v, QByteArray) and not v.isEmpty() else None  # noqa: E731
        return ok(geometry), ok(state)

    def save_layout(self, geometry: QByteArray, state: QByteArray) -> None:
        self._qs.setValue("version", FORMAT_VERSION)
        self._qs.setValue("window/geometry", geometry)
        self._qs.setValue("window/state", state)

    # small flags -----------------------------------------------------------------
    def value(self, key: str, default, kind=str):
        raw = self._qs.value(key)
        if raw is None:
            return default
        try:
            if kind is bool:
                return raw if isinstance(raw, bool) else str(raw).lower() in ("true", "1")
            return kind(raw)
        except (TypeError, ValueError):
            return default

    def set_value(self, key: str, value) -> None:
        self._qs.setValue(key, value)

    def sync(self) -> None:
        self._qs.sync()
