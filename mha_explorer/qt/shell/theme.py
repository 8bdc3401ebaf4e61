"""The light and dark themes: one set of colours per theme, a QPalette made from
it, and the style sheet in resources/ that dresses the panels.

Views never hold a theme: they read their palette (``theme_of(widget)``), so a
theme switch reaches them as an ordinary PaletteChange. Every text colour is
chosen to reach 7:1 against the background it is drawn on (WCAG AAA); the
tests compute the ratios from ``text_pairs``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeVar

from PySide6.QtCore import QCoreApplication, QEvent, Qt
from PySide6.QtGui import QColor, QPalette, QPen
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QProxyStyle,
    QStyle,
    QStyleFactory,
    QToolTip,
    QWidget,
)

from mha_explorer import assets
from mha_explorer.core.display import colors

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


def style_sheet(theme: Theme) -> str:
    return assets.read_text(theme.qss_name)


class ProjectorStyle(QProxyStyle):
    """Fusion (the style that honours a palette on every platform), with a check box's
    outline that stays in sight on a dark window. The application's style."""

    def __init__(self) -> None:
        super().__init__(QStyleFactory.create("Fusion"))

    def drawPrimitive(self, element, option, painter, widget=None) -> None:
        super().drawPrimitive(element, option, painter, widget)
        if element == QStyle.PrimitiveElement.PE_IndicatorCheckBox:
            # Fusion outlines the box in a darker window colour, which vanishes on a dark
            # window: a line in the theme's border colour keeps it 3:1 in both themes
            painter.save()
            painter.setPen(QPen(option.palette.color(QPalette.ColorRole.Mid), 1))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRect(option.rect.adjusted(0, 0, -1, -1))
            painter.restore()


class IndicatorStyle(ProjectorStyle):
    """The same, with a check box's or radio button's box growing with its text: at
    projector type a fixed 13-pixel box is lost beside a 20-point label. Given to those
    buttons alone (``grows_with_text``): as the application's style, Qt asked this Python
    override for every size of every widget, about 13,000 times before the first paint
    (some 50 ms of a start)."""

    INDICATORS = (QStyle.PixelMetric.PM_IndicatorWidth, QStyle.PixelMetric.PM_IndicatorHeight,
                  QStyle.PixelMetric.PM_ExclusiveIndicatorWidth,
                  QStyle.PixelMetric.PM_ExclusiveIndicatorHeight)

    def pixelMetric(self, metric, option=None, widget=None) -> int:
        size = super().pixelMetric(metric, option, widget)
        if metric in self.INDICATORS and widget is not None:
            size = max(size, round(widget.fontMetrics().height() * 0.8))
        return size


Button = TypeVar("Button", bound=QAbstractButton)


def grows_with_text(button: Button) -> Button:
    """``button`` (a check box or radio button) with a box as large as its text asks for."""
    app = QApplication.instance()
    style = app.findChild(IndicatorStyle, "indicator_style")  # one for every button
    if style is None:
        style = IndicatorStyle()
        style.setObjectName("indicator_style")
        style.setParent(app)
    button.setStyle(style)
    return button


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
    app.setStyleSheet(style_sheet(theme))
    # Qt posts the change to the widgets: deliver it now, so whatever is drawn or
    # measured next (an export, a test) is already in the new theme
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
