"""The light and dark themes: one set of colours per theme, a QPalette made from
it, and the style sheets in resources/ that dress the panels.

Views never hold a theme: they read their palette (``theme_of(widget)``), so a
theme switch reaches them as an ordinary PaletteChange. Every text colour is
chosen to reach 7:1 against the background it is drawn on (WCAG AAA); the
tests compute the ratios from ``text_pairs``.

The application's style sheet holds both themes' rules, each under the windows whose
``theme`` property names its theme, and is set once. A switch changes the palette and that
property, and restyles only the widgets a rule picks (a few dozen): setting the application a
new style sheet restyled every widget of the window (some 1,500 once every dock is open),
which held the event loop for 0.4 s and more.
"""

from __future__ import annotations

import functools
import gc
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import MappingProxyType

from PySide6 import QtWidgets
from PySide6.QtCore import QCoreApplication, QEvent, Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QToolTip, QWidget

from mha_explorer import assets
from mha_explorer.core.display import colors
from mha_explorer.qt.shell.projector_style import ProjectorStyle

AAA = 7.0  # WCAG 2 level AAA for body text
AAA_LARGE = 4.5  # AAA for large text (≥ 18 pt, or ≥ 14 pt bold): the dim chips


@dataclass(frozen=True)
class DiagramColors:
    """What the stage diagram paints with: a page, ink, and the block fills."""

    background: str
    ink: str
    muted: str
    block_fill: str  # activations
    weight_fill: str  # learned weights
    result_fill: str  # the tensor a stage produces
    mask_fill: str  # hatch over masked cells
    mask_cover: str  # solid under the hatch
    slice_tints: tuple[str, str]  # alternating head slices
    copy_red: str  # the one stage that copies memory


@dataclass(frozen=True)
class Theme:
    name: str
    label: str
    window: str
    window_text: str
    base: str
    alt_base: str
    text: str
    muted: str  # secondary text: counters, costs, notes
    disabled: str
    button: str
    button_text: str
    highlight: str
    highlighted_text: str
    tooltip_base: str
    tooltip_text: str
    link: str
    border: str  # lines and frames, never text
    accent: str  # the current stage, a checked mode button
    accent_text: str
    past: str  # stages already shown
    past_text: str
    error_bg: str
    error_text: str
    error_on_window: str  # a failure in the status bar
    quadratic_text: str  # the T·S term, in T's vermillion family
    saving_text: str  # what GQA/MQA save, in H's green family
    code_comment: str  # the code panel's page and plain text are base and text
    code_keyword: str
    code_string: str
    code_highlight: str  # background of the current stage's lines
    current_row: str  # the shapes table's current stage
    current_row_text: str
    diagram: DiagramColors

    @property
    def qss_name(self) -> str:
        return f"{self.name}.qss"

    def q(self, name: str) -> QColor:
        return QColor(getattr(self, name))


LIGHT = Theme(
    name="light", label="Light",
    window="#F3F4F6", window_text="#0E1116", base="#FFFFFF", alt_base="#EEF1F4",
    text="#0E1116", muted="#3B424C", disabled="#444A53",
    button="#E6E9EE", button_text="#0E1116",
    highlight="#0A4F8F", highlighted_text="#FFFFFF",
    tooltip_base="#FFFFFF", tooltip_text="#0E1116", link="#0A4A8A", border="#6F7884",
    accent="#0A4F8F", accent_text="#FFFFFF", past="#D3E4F2", past_text="#0B2E45",
    error_bg="#FDECEA", error_text="#7A0010", error_on_window="#8A0014",
    quadratic_text="#8A3300", saving_text="#00573A",
    code_comment="#24502A", code_keyword="#1A3A8F",
    code_string="#7A3210", code_highlight="#FFE9A8",
    current_row="#FFE08A", current_row_text="#000000",
    diagram=DiagramColors(
        background="#FFFFFF", ink="#111111", muted="#454545", block_fill="#E8EEF6",
        weight_fill="#FBEFD0", result_fill="#DDEFE4", mask_fill="#9A9A9A", mask_cover="#D4D4D4",
        slice_tints=("#CFE8DF", "#EAF5F0"), copy_red="#A3141F"),
)

DARK = Theme(
    name="dark", label="Dark",
    window="#15181D", window_text="#F1F3F6", base="#22262D", alt_base="#2A2F37",
    text="#F1F3F6", muted="#C2C8D0", disabled="#C3C9D1",
    button="#2E343D", button_text="#F1F3F6",
    highlight="#8FC8FF", highlighted_text="#06121F",
    tooltip_base="#2E343D", tooltip_text="#F1F3F6", link="#9CCBFF", border="#8A93A0",
    accent="#8FC8FF", accent_text="#06121F", past="#1E3A52", past_text="#E3F0FB",
    error_bg="#3A1014", error_text="#FFC9CE", error_on_window="#FF9AA5",
    quadratic_text="#FFB38A", saving_text="#8FE0B8",
    code_comment="#A8D8A8", code_keyword="#A9C8FF",
    code_string="#F3B58E", code_highlight="#3A3008",
    current_row="#4D3D00", current_row_text="#FFFFFF",
    diagram=DiagramColors(
        background="#101317", ink="#F1F3F6", muted="#BFC5CD", block_fill="#26303C",
        weight_fill="#3B321C", result_fill="#1F3A2C", mask_fill="#8A8A8A", mask_cover="#3A3F46",
        slice_tints=("#1F3A33", "#2A3531"), copy_red="#FF8A94"),
)

THEMES: MappingProxyType[str, Theme] = MappingProxyType({t.name: t for t in (LIGHT, DARK)})
DEFAULT_THEME = LIGHT.name


def theme_named(name: str) -> Theme:
    """The theme called ``name``; an unknown name (an old settings file) is the default."""
    return THEMES.get(str(name).lower(), THEMES[DEFAULT_THEME])


def other_theme(theme: Theme) -> Theme:
    return DARK if theme is not DARK else LIGHT


# contrast ---------------------------------------------------------------------------
def relative_luminance(color) -> float:
    """WCAG 2 relative luminance of an sRGB colour (a QColor or '#RRGGBB')."""
    return colors.relative_luminance(QColor(color).name())


def contrast_ratio(fg, bg) -> float:
    """WCAG 2 contrast ratio, from 1 (none) to 21 (black on white)."""
    return colors.contrast_ratio(QColor(fg).name(), QColor(bg).name())


def text_pairs(theme: Theme) -> list[tuple[str, str, str]]:
    """(what, text colour, background) for every text the theme colours itself."""
    t, d = theme, theme.diagram
    pairs = [
        ("window text", t.window_text, t.window),
        ("text on base", t.text, t.base),
        ("text on alternate rows", t.text, t.alt_base),
        ("muted text on window", t.muted, t.window),
        ("muted text on base", t.muted, t.base),
        ("disabled text on window", t.disabled, t.window),
        ("disabled text on base", t.disabled, t.base),
        ("disabled text on a button", t.disabled, t.button),
        ("button text", t.button_text, t.button),
        ("selected text", t.highlighted_text, t.highlight),
        ("tooltip", t.tooltip_text, t.tooltip_base),
        ("link on base", t.link, t.base),
        ("link on window", t.link, t.window),
        ("current stage", t.accent_text, t.accent),
        ("past stage", t.past_text, t.past),
        ("a choice the weights fix (MHA / GQA / MQA)", t.past_text, t.past),
        ("inline error", t.error_text, t.error_bg),
        ("status-bar failure", t.error_on_window, t.window),
        ("quadratic term", t.quadratic_text, t.window),
        ("saving", t.saving_text, t.window),
        ("code comment", t.code_comment, t.base),
        ("code keyword", t.code_keyword, t.base),
        ("code string", t.code_string, t.base),
        ("lit code", t.text, t.code_highlight),
        ("lit code comment", t.code_comment, t.code_highlight),
        ("lit code keyword", t.code_keyword, t.code_highlight),
        ("lit code string", t.code_string, t.code_highlight),
        ("table's current stage", t.current_row_text, t.current_row),
        ("diagram ink", d.ink, d.background),
        ("diagram muted", d.muted, d.background),
        ("diagram copy note", d.copy_red, d.background),
    ]
    for fill in ("block_fill", "weight_fill", "result_fill"):
        pairs.append((f"diagram ink on {fill.replace('_', ' ')}", d.ink, getattr(d, fill)))
    for i, tint in enumerate(d.slice_tints):
        pairs.append((f"diagram ink on head slice {i}", d.ink, tint))
    return pairs


# applying -----------------------------------------------------------------------------
def make_palette(theme: Theme) -> QPalette:
    role, group = QPalette.ColorRole, QPalette.ColorGroup
    p = QPalette()
    colours = {
        role.Window: theme.window, role.WindowText: theme.window_text, role.Base: theme.base,
        role.AlternateBase: theme.alt_base, role.Text: theme.text, role.Button: theme.button,
        role.ButtonText: theme.button_text, role.Highlight: theme.highlight,
        role.HighlightedText: theme.highlighted_text, role.ToolTipBase: theme.tooltip_base,
        role.ToolTipText: theme.tooltip_text, role.Link: theme.link, role.LinkVisited: theme.link,
        role.PlaceholderText: theme.disabled, role.BrightText: theme.error_on_window,
        role.Accent: theme.accent,
        # frames and bevels, derived from the border colour
        role.Light: theme.base, role.Midlight: theme.button, role.Mid: theme.border,
        role.Dark: theme.border, role.Shadow: theme.window_text,
    }
    for r, value in colours.items():
        p.setColor(r, QColor(value))
    for r in (role.WindowText, role.Text, role.ButtonText):
        p.setColor(group.Disabled, r, QColor(theme.disabled))
    # a disabled field sinks into the window: told apart by its ground, since its
    # text keeps 7:1 like every other text
    p.setColor(group.Disabled, role.Base, QColor(theme.window))
    p.setColor(group.Disabled, role.Highlight, QColor(theme.border))
    p.setColor(group.Disabled, role.HighlightedText, QColor(theme.base))
    return p


THEME_PROPERTY = "theme"  # on each window: the theme whose rules dress it and what it holds
_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_RULE = re.compile(r"([^{}]+)\{([^}]*)\}")
_STEP = re.compile(r'^(?P<type>[A-Za-z]\w*)?(?:#(?P<id>\w+))?(?P<wanted>(?:\[\w+="[^"]*"\])*)')
_WANTED = re.compile(r'\[(\w+)="([^"]*)"\]')
_TOOLTIP = "QToolTip"  # a tool tip is a window of its own, with the colours of QToolTip.palette


def _rules(theme: Theme) -> list[tuple[list[str], str]]:
    """(selectors, declarations) of the theme's style sheet, in order."""
    text = _COMMENT.sub("", assets.read_text(theme.qss_name))
    return [([part.strip() for part in selectors.split(",")], body.strip())
            for selectors, body in _RULE.findall(text)]


# a tool tip is a window of its own, not under the windows' theme: its rule names the palette's
# roles (QToolTip.palette, the theme's: make_palette) where the theme's file names their colours
_TOOLTIP_ROLES = {"tooltip_text": "tooltip-text", "tooltip_base": "tooltip-base", "border": "mid"}


@functools.cache
def style_sheet() -> str:
    """Both themes' rules, each under the windows whose ``theme`` property names its theme
    (the tool tip's once, in palette roles)."""
    rules: list[str] = []
    for theme in THEMES.values():
        for selectors, body in _rules(theme):
            if selectors == [_TOOLTIP]:
                for field, role in _TOOLTIP_ROLES.items():
                    body = re.sub(re.escape(getattr(theme, field)), f"palette({role})", body, flags=re.I)
                rule = f"{_TOOLTIP} {{ {body} }}"
            else:
                under = ", ".join(f'*[{THEME_PROPERTY}="{theme.name}"] {s}' for s in selectors)
                rule = f"{under} {{ {body} }}"
            if rule not in rules:
                rules.append(rule)
    return "\n".join(rules)


@dataclass(frozen=True)
class _Step:
    """One part of a selector: a class, an object name, and properties it must have."""

    type: str | None
    id: str | None
    wanted: tuple[tuple[str, str], ...]

    def picks(self, widget: QWidget) -> bool:
        if self.type is not None and not widget.inherits(self.type):
            return False
        if self.id is not None and widget.objectName() != self.id:
            return False
        return all(str(widget.property(name)).lower() == value.lower() for name, value in self.wanted)


@functools.cache
def _selectors() -> tuple[tuple[_Step, ...], ...]:
    """The style sheet's selectors as steps, outermost first (states such as :hover dropped:
    a widget a rule may pick in some state is restyled)."""
    found = []
    for selectors, _body in _rules(THEMES[DEFAULT_THEME]):  # every theme has the same selectors
        for selector in selectors:
            steps = []
            for part in selector.split():
                step = _STEP.match(part.split(":")[0])
                steps.append(_Step(step["type"], step["id"], tuple(_WANTED.findall(step["wanted"]))))
            found.append(tuple(steps))
    return tuple(found)


def _picked(widget: QWidget, selector: tuple[_Step, ...]) -> bool:
    if not selector[-1].picks(widget):
        return False
    wanted, above = len(selector) - 2, widget.parentWidget()
    while wanted >= 0 and above is not None:
        wanted -= selector[wanted].picks(above)
        above = above.parentWidget()
    return wanted < 0


@contextmanager
def _no_collection() -> Iterator[None]:
    """Python's cycle collector paused while Qt's lists of widgets become Python objects: a
    collection in between freed a window nobody referred to any more (a closed one), Qt
    deleted it, and the list went on to a widget that no longer existed (a crash)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def styled_widgets(app: QApplication) -> list[QWidget]:
    """The widgets a rule of the style sheet picks (the tool tip's included). The selectors
    that end in the same kind of widget share one search of each window: the window's
    hidden popups and menus make hundreds of windows, searched once per selector before."""
    by_subject: dict[tuple[str | None, str | None], list[tuple[_Step, ...]]] = {}
    for selector in _selectors():
        by_subject.setdefault((selector[-1].type, selector[-1].id), []).append(selector)
    windows = app.topLevelWidgets()
    picked = []
    for (kind_name, name), selectors in by_subject.items():
        if kind_name == _TOOLTIP:
            picked += [window for window in windows if window.inherits("QTipLabel")]
            continue
        kind = QWidget if kind_name is None else getattr(QtWidgets, kind_name, QWidget)
        for window in windows:
            found = window.findChildren(kind, name) if name else window.findChildren(kind)
            picked += [w for w in (window, *found) if any(_picked(w, selector) for selector in selectors)]
    return list(dict.fromkeys(picked))


def mark_theme(window: QWidget) -> None:
    """A window made without a parent takes the application's theme (an export's page)."""
    window.setProperty(THEME_PROPERTY, QApplication.instance().property(THEME_PROPERTY) or DEFAULT_THEME)


_STYLE_MARK = "mhaExplorerProjectorStyle"  # set on the application once ProjectorStyle is its style


def apply_theme(app: QApplication, theme: Theme) -> None:
    """Dress the whole application: its palette and style sheet are what every widget
    starts from, so a dialog or popup made later is themed too (a palette set on a
    window would not reach a child added under a style sheet)."""
    # Without this, a widget under a style sheet stops inheriting its parent's font:
    # presentation mode's larger application type would never reach the panels.
    app.setAttribute(Qt.ApplicationAttribute.AA_UseStyleSheetPropagationInWidgetStyles)
    # under a style sheet app.style() is Qt's style-sheet style, never ours: without a mark, each
    # switch installed a new style and restyled every widget once more (about 0.3 s of the 1.2)
    if not isinstance(app.style(), ProjectorStyle) and not app.property(_STYLE_MARK):
        app.setStyle(ProjectorStyle())
        app.setProperty(_STYLE_MARK, True)
    palette = make_palette(theme)
    app.setPalette(palette)
    QToolTip.setPalette(palette)  # tool tips keep a palette of their own
    app.setProperty(THEME_PROPERTY, theme.name)
    with _no_collection():
        for window in app.topLevelWidgets():
            window.setProperty(THEME_PROPERTY, theme.name)
        if app.styleSheet() != style_sheet():
            app.setStyleSheet(style_sheet())  # once: both themes' rules, each under its windows
        else:  # the rules that pick a widget follow its window's theme once it is restyled
            style = app.style()
            for widget in styled_widgets(app):
                if widget.testAttribute(Qt.WidgetAttribute.WA_WState_Polished):
                    style.unpolish(widget)
                    style.polish(widget)
                    widget.update()
        # Qt posts the change to the widgets: deliver it now, so whatever is drawn or
        # measured next (an export, a test) is already in the new theme. Still without a
        # collection: the widgets' own handlers run in between, and a closed window freed
        # then was deleted under the delivery (a crash at a window's first theme)
        QCoreApplication.sendPostedEvents(None, QEvent.Type.ApplicationPaletteChange)


def theme_of(widget: QWidget) -> Theme:
    """The theme a widget is drawn in, read from its palette: the theme whose window
    colour it has, else light or dark by the window's luminance (an unthemed widget
    in a test, or on a desktop with a dark system palette)."""
    window = widget.palette().color(QPalette.ColorRole.Window).name().upper()
    for theme in THEMES.values():
        if theme.window.upper() == window:
            return theme
    return DARK if relative_luminance(window) < 0.18 else LIGHT
