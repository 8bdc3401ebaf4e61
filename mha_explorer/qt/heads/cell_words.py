"""The words above and below a head's map: its title (with the coloured badge of its key/value
head), its footer, the shorter forms of both that a narrow cell falls back to ('head 3 kv 0',
'h3 kv0', 'h3'), and how wide a title is drawn in a given type. The cell picks among these
forms for its width; this module only says what the forms are and measures them, once per
text and type, so that every cell of a grid (and the head dialog) words a map alike.
"""

from __future__ import annotations

import re

from PySide6.QtGui import QFont, QTextDocument, QTextDocumentFragment

from mha_explorer.core.display.colors import group_color, ink_on
from mha_explorer.core.display.head_maps import HeatMap


def badge_html(text: str, color: str) -> str:
    """A small coloured tag, with black or white text, whichever has the higher WCAG
    contrast (a brightness rule put white on green and vermillion at 3.3-3.8:1)."""
    ink = ink_on(color)
    return (f'<span style="background-color:{color}; color:{ink}; font-weight:600">'
            f"&nbsp;{text}&nbsp;</span>")


def map_title_html(heatmap: HeatMap, short: bool = False) -> str:
    """The map's title; ``short``: 'h3' for 'head 3', 'kv0' for its K/V head's badge."""
    title = short_title(heatmap.title) if short else heatmap.title
    if heatmap.kv_group is None:
        return f"<b>{title}</b>"
    if heatmap.head is None:  # a key/value head itself: colour its title
        return badge_html(title, group_color(heatmap.kv_group))
    kv = f"kv{heatmap.kv_group}" if short else f"kv {heatmap.kv_group}"
    return f"<b>{title}</b> " + badge_html(kv, group_color(heatmap.kv_group))


def short_title(title: str) -> str:
    """'q_nope · head 10' -> 'q_nope · h10'; 'kv head 0' -> 'kv0'."""
    return re.sub(r"\bhead (\d+)", r"h\1", title.replace("kv head ", "kv"))


def title_forms(heatmap: HeatMap) -> list[str]:
    """A map's title, then shorter forms for a narrow cell: 'head 3 kv 0', 'h3 kv0', 'h3',
    then the head's number alone; the last is none (the hover says it)."""
    short = map_title_html(heatmap, short=True)
    name = short_title(heatmap.title).split(" · ")[-1]
    last = badge_html(name, group_color(heatmap.kv_group)) if heatmap.head is None and \
        heatmap.kv_group is not None else f"<b>{name}</b>"
    return [map_title_html(heatmap), short, last, ""]  # one length for all: a level is a form


def footer_forms(footer: str) -> list[str]:
    """A footer ('entropy 2.31 bits · prev 0.85'), then shorter: without 'entropy' (the
    caption says the numbers are entropies), its first part ('2.31 bits'), none."""
    short = footer.removeprefix("entropy ")
    return list(dict.fromkeys([footer, short, short.split(" · ")[0], ""]))


def plain_text(rich: str) -> str:
    return QTextDocumentFragment.fromHtml(rich).toPlainText()


def html_width(rich: str, font: QFont) -> float:
    """How wide ``rich`` is drawn in ``font`` (a label's rich text, margins none)."""
    if not rich:
        return 0.0
    key = (rich, font.key())
    if key not in _WIDTHS:
        doc = QTextDocument()
        doc.setDocumentMargin(0)
        doc.setDefaultFont(font)
        doc.setHtml(rich)
        _WIDTHS[key] = doc.idealWidth() + 2  # the label's own rounding
        if len(_WIDTHS) > 4096:
            _WIDTHS.clear()
    return _WIDTHS[key]


_WIDTHS: dict[tuple[str, str], float] = {}
