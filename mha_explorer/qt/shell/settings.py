"""Preferences kept between runs (window layout, last config, theme, motion).

The file location is injectable (``--settings FILE`` or MHA_EXPLORER_SETTINGS),
so tests never touch the user's own preferences. A file that cannot be read, that
belongs to something else, or that another version wrote is ignored with a
warning rather than breaking the start, and it is never written to or cleared:
the preferences of that session are kept in memory only.
"""

from __future__ import annotations

import json
import logging
import os

from PySide6.QtCore import QByteArray, QSettings

from mha_explorer.core.config import ConfigError, MHAConfig

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
        self._memory: dict[str, object] | None = None  # set when the file is ignored
        keys = self._qs.allKeys()  # QSettings reads lazily: only now does status() know
        name = self._qs.fileName()
        if self._qs.status() != QSettings.Status.NoError:
            self._ignore(f"the settings file {name} could not be read; using defaults")
        elif keys and not self._qs.contains("version"):
            self._ignore(f"{name} is not an MHA Explorer settings file; using defaults")
        elif keys and self._int("version") != FORMAT_VERSION:
            self._ignore(f"the settings file {name} is from another version; using defaults")

    @property
    def file_name(self) -> str:
        return self._qs.fileName()

    @property
    def ignored(self) -> bool:
        """True when the file was not trusted: it is left exactly as it was."""
        return self._memory is not None

    def _ignore(self, message: str) -> None:
        # never clear() it: it may be another program's file, or a newer version's
        message += " (the file is left as it is; this session's preferences are not saved)"
        log.warning(message)
        self.warnings.append(message)
        self._memory = {}

    def _get(self, key: str):
        return self._memory.get(key) if self._memory is not None else self._qs.value(key)

    def _set(self, key: str, value) -> None:
        if self._memory is not None:
            self._memory[key] = value
        else:
            self._qs.setValue(key, value)

    def _int(self, key: str) -> int | None:
        try:
            return int(self._qs.value(key))
        except (TypeError, ValueError):
            return None

    # the last config -----------------------------------------------------------
    def load_config(self) -> MHAConfig | None:
        raw = self._get("config")
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
        self._set("version", FORMAT_VERSION)
        self._set("config", json.dumps(cfg.to_dict()))

    # window layout ---------------------------------------------------------------
    def load_layout(self) -> tuple[QByteArray | None, QByteArray | None]:
        geometry, state = self._get("window/geometry"), self._get("window/state")
        ok = lambda v: v if isinstance(v, QByteArray) and not v.isEmpty() else None  # noqa: E731
        return ok(geometry), ok(state)

    def save_layout(self, geometry: QByteArray, state: QByteArray) -> None:
        self._set("version", FORMAT_VERSION)
        self._set("window/geometry", geometry)
        self._set("window/state", state)

    # small flags -----------------------------------------------------------------
    def value(self, key: str, default, kind=str):
        raw = self._get(key)
        if raw is None:
            return default
        try:
            if kind is bool:
                return raw if isinstance(raw, bool) else str(raw).lower() in ("true", "1")
            return kind(raw)
        except (TypeError, ValueError):
            return default

    def set_value(self, key: str, value) -> None:
        self._set("version", FORMAT_VERSION)  # so a file of ours is always recognised
        self._set(key, value)

    def sync(self) -> None:
        if self._memory is None:
            self._qs.sync()
