"""A contact sheet: every picture of a walk as a PNG, and one page that shows them all, each
with what the checks found in it, so a reviewer sees the whole matrix at a glance."""

from __future__ import annotations

import html
import re
from collections import Counter
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice

from mha_explorer.core.system import safe_files
from mha_explorer.qt.gallery.faults import KINDS, Fault
from mha_explorer.qt.gallery.walk import Shown

INDEX = "index.html"
THUMB_W = 360  # px: the page shows each picture this wide; a click opens it whole


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9@.-]+", "-", text).strip("-").lower()


def picture_path(shown: Shown, index: int) -> Path:
    """Where a picture goes under the sheet's folder: setup / screen-mode-theme /
    NN-stage.png, or NN-stage-dock.png with a dock brought to the front."""
    case = shown.case
    front = f"-{_slug(shown.front)}" if shown.front else ""
    return (Path(_slug(case.setup.name)) / f"{_slug(case.screen.name)}-{case.mode}-{case.theme}"
            / f"{index:02d}-{_slug(shown.stage)}{front}.png")


def png_bytes(shown: Shown) -> bytes:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not shown.picture.image.save(buffer, "PNG"):
        raise OSError(f"the picture {shown.name} could not be encoded")
    buffer.close()
    return bytes(data)


class Sheet:
    """Collects the pictures as they are written, then the page (``finish``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._entries: list[tuple[Shown, Path, list[Fault]]] = []
        self._count: dict[tuple, int] = {}

    @property
    def count(self) -> int:
        return len(self._entries)

    def add(self, shown: Shown, faults: list[Fault]) -> Path:
        key = (shown.case.setup.name, shown.case.screen.name, shown.case.mode, shown.case.theme)
        self._count[key] = self._count.get(key, 0) + 1
        relative = picture_path(shown, self._count[key])
        target = self.folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        safe_files.write_bytes(target, png_bytes(shown))
        self._entries.append((shown, relative, faults))
        return target

    def finish(self, notes: list[str]) -> Path:
        return safe_files.write_bytes(self.folder / INDEX, self.page(notes).encode("utf-8"))

    def page(self, notes: list[str]) -> str:
        kinds = Counter(f.kind for _s, _p, faults in self._entries for f in faults)
        total = ", ".join(f"{kinds[k]} {k}" for k in KINDS if kinds[k]) or "none"
        parts = [
            "<!DOCTYPE html><html><head><meta charset='utf-8'><title>MHA Explorer: every picture</title>",
            "<style>body{font-family:sans-serif;margin:16px}figure{display:inline-block;"
            f"vertical-align:top;width:{THUMB_W}px;margin:6px}}img{{width:{THUMB_W}px;"
            "border:1px solid #888}figcaption{font-size:13px}.bad{color:#8A0014}"
            "li{font-size:12px}</style></head><body>",
            f"<h1>{len(self._entries)} pictures</h1><p>Faults found: {html.escape(total)}</p>",
        ]
        parts += [f"<p>{html.escape(note)}</p>" for note in notes]
        current = None
        for shown, relative, faults in self._entries:
            case = shown.case
            heading = f"{case.setup.name} · {case.screen.name} · {case.mode} · {case.theme}"
            if heading != current:
                parts.append(f"<h2>{html.escape(heading)}</h2>")
                current = heading
            link = html.escape(relative.as_posix(), quote=True)
            front = f" · {shown.front} in front" if shown.front else ""
            said = "".join(f"<li>{html.escape(f.kind)}: {html.escape(' | '.join(f.texts))}"
                           f" ({html.escape(f.detail or f.where)})</li>" for f in faults[:12])
            more = f"<li>… {len(faults) - 12} more</li>" if len(faults) > 12 else ""
            state = f"<span class='bad'>{len(faults)} faults</span>" if faults else "no faults"
            parts.append(f"<figure><a href='{link}'><img src='{link}' loading='lazy' alt=''></a>"
                         f"<figcaption>{html.escape(shown.stage + front)}: {state}<ul>{said}{more}</ul>"
                         "</figcaption></figure>")
        parts.append("</body></html>")
        return "\n".join(parts)
