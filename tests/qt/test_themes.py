"""Both themes keep every text at 7:1 against its background (WCAG AAA), their
style sheets use only the theme's colours, and a switch reaches the parts that
paint themselves: the diagram, the code, the table and the heatmap axes."""

from __future__ import annotations

import re

import pytest
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

from mha_explorer import assets
from mha_explorer.core.display.colors import DIM_COLORS, GROUP_COLORS
from mha_explorer.qt.heads.cell_words import badge_html
from mha_explorer.qt.shell.theme import (
    AAA,
    AAA_LARGE,
    DARK,
    LIGHT,
    THEMES,
    contrast_ratio,
    make_palette,
    relative_luminance,
    text_pairs,
    theme_of,
)
from mha_explorer.qt.stage import diagram_style as style

RULE = re.compile(r"([^{}]+)\{([^}]*)\}")
COLOUR = re.compile(r"#[0-9A-Fa-f]{6}\b")
NOT_TEXT = ('QFrame[role="rule"]',)  # a hairline between rows, not something to read


def test_contrast_ratio_matches_wcag_reference_values():
    assert contrast_ratio("#000000", "#FFFFFF") == pytest.approx(21.0)
    assert contrast_ratio("#FFFFFF", "#FFFFFF") == pytest.approx(1.0)
    assert contrast_ratio("#777777", "#FFFFFF") == pytest.approx(4.48, abs=0.01)
    assert contrast_ratio("#0000FF", "#FFFFFF") == pytest.approx(8.59, abs=0.01)
    assert contrast_ratio("#FFFFFF", "#000000") == contrast_ratio("#000000", "#FFFFFF")
    assert relative_luminance(QColor("#808080")) == pytest.approx(0.2159, abs=1e-4)


@pytest.mark.parametrize("theme", THEMES.values(), ids=list(THEMES))
def test_every_text_colour_reaches_seven_to_one(theme):
    low = {what: round(contrast_ratio(fg, bg), 2) for what, fg, bg in text_pairs(theme)
           if contrast_ratio(fg, bg) < AAA}
    assert low == {}


@pytest.mark.parametrize("theme", THEMES.values(), ids=list(THEMES))
def test_the_palette_carries_the_theme(theme):
    palette = make_palette(theme)
    role = QPalette.ColorRole
    for text_role, ground in ((role.WindowText, role.Window), (role.Text, role.Base),
                              (role.ButtonText, role.Button), (role.HighlightedText, role.Highlight),
                              (role.ToolTipText, role.ToolTipBase), (role.PlaceholderText, role.Base)):
        ratio = contrast_ratio(palette.color(text_role), palette.color(ground))
        assert ratio >= AAA, (text_role, ground, ratio)
    disabled = QPalette.ColorGroup.Disabled
    for text_role in (role.WindowText, role.Text, role.ButtonText):
        for ground in (role.Window, role.Base, role.Button):
            assert contrast_ratio(palette.color(disabled, text_role),
                                  palette.color(disabled, ground)) >= AAA


def qss_rules(theme):
    """(selector, {property: value}) for every rule of the theme's style sheet."""
    text = re.sub(r"/\*.*?\*/", "", assets.read_text(theme.qss_name), flags=re.S)
    rules = []
    for selector, body in RULE.findall(text):
        props = {}
        for declaration in body.split(";"):
            if ":" in declaration:
                name, value = declaration.split(":", 1)
                props[name.strip()] = value.strip()
        rules.append((" ".join(selector.split()), props))
    return rules


@pytest.mark.parametrize("theme", THEMES.values(), ids=list(THEMES))
def test_the_style_sheet_text_reaches_seven_to_one(theme):
    checked = 0
    for selector, props in qss_rules(theme):
        if "color" not in props or selector in NOT_TEXT:
            continue
        ground = props.get("background", props.get("background-color", "transparent"))
        # no ground of its own: the text sits on the window, a field or a card
        grounds = [theme.window, theme.base] if ground == "transparent" else [ground]
        for bg in grounds:
            ratio = contrast_ratio(props["color"], bg)
            assert ratio >= AAA, (selector, props["color"], bg, round(ratio, 2))
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("theme", THEMES.values(), ids=list(THEMES))
def test_the_style_sheet_uses_only_the_themes_colours(theme):
    own = {str(getattr(theme, name)).upper() for name in vars(theme) if name != "diagram"}
    used = {c.upper() for c in COLOUR.findall(assets.read_text(theme.qss_name))}
    assert used and used <= own, used - own


def test_dim_chips_reach_the_large_text_level():
    """The dim chips are bold 14-15 pt: large text, for which AAA asks 4.5:1. Their
    fills are the dims' identity colours; the text is black or white, whichever reads."""
    for dim, fill in DIM_COLORS.items():
        ink = style.text_on(QColor(fill))
        assert contrast_ratio(ink, fill) >= AAA_LARGE, (dim, fill, ink.name())


def test_key_value_group_badges_reach_the_large_text_level():
    """The 'kv 1' badges of the heatmap titles: black or white text on the group colour."""
    for colour in GROUP_COLORS:
        ink = re.search(r"; color:(#[0-9a-fA-F]{6})", badge_html("kv", colour)).group(1)
        assert contrast_ratio(ink, colour) >= AAA_LARGE, (colour, ink)


def test_a_theme_switch_reaches_every_painted_part(qtbot, make_window):
    window = make_window(size=(1920, 1080))
    window.controller.set_stage("softmax")
    for theme in (DARK, LIGHT):
        window.set_theme(theme, remember=False)
        app = QApplication.instance()
        assert app.palette().color(QPalette.ColorRole.Window) == QColor(theme.window)
        view = window.stage_view
        assert theme_of(view) is theme
        assert view.diagram.scene().backgroundBrush().color() == QColor(theme.diagram.background)
        selections = view.code_panel.extraSelections()  # keep them while reading one
        assert selections[0].format.background().color() == QColor(theme.code_highlight)
        row = window.shapes.highlighted_rows()[0]
        cell = window.shapes.model().index(row, 0)
        assert cell.data(0x8).color() == QColor(theme.current_row)  # BackgroundRole
        axis = window.heatmaps.cells[0].left_axis
        assert axis.textPen().color() == QColor(theme.window_text)


def test_a_theme_switch_restyles_only_what_the_style_sheet_dresses(qtbot, make_window):
    """A new application style sheet restyled every widget of the window (some 1,500 with
    every dock open: 0.4 s and more of a frozen window); the one style sheet holds both
    themes, so a switch restyles the widgets its rules pick, and those take the new colours."""
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QLabel, QToolButton

    window = make_window(wait=False)
    window.set_theme(LIGHT, remember=False)
    labels = window.findChildren(QLabel)
    plain = [label for label in labels if label.property("role") is None and label.property("tone") is None]
    muted = next(label for label in labels if label.property("role") == "muted")
    current = next(b for b in window.findChildren(QToolButton) if b.property("phase") == "current")
    restyled = []

    class Watch(QObject):
        def eventFilter(self, watched, event):
            if event.type() == QEvent.Type.StyleChange:
                restyled.append(watched)
            return False

    watch = Watch()
    for label in plain:
        label.installEventFilter(watch)
    try:
        for theme in (DARK, LIGHT, DARK):
            window.set_theme(theme, remember=False)
            role = QPalette.ColorRole
            assert muted.palette().color(role.WindowText) == QColor(theme.muted)
            assert current.palette().color(role.ButtonText) == QColor(theme.accent_text)
            assert current.palette().color(role.Button) == QColor(theme.accent)
    finally:
        for label in plain:
            label.removeEventFilter(watch)
    assert len(plain) > 20 and restyled == []


def test_switching_the_theme_keeps_the_one_style_it_installed(qapp, monkeypatch):
    """Under a style sheet the application reports Qt's style-sheet style, so each switch
    used to install a new ProjectorStyle and restyle every widget once more (a second of
    frozen window per switch, with the style sheet's own pass; benchmarks/theme_switch.py)."""
    from mha_explorer.qt.shell import theme as theme_module

    made = []

    class Counted(theme_module.ProjectorStyle):
        def __init__(self):
            super().__init__()
            made.append(self)

    monkeypatch.setattr(theme_module, "ProjectorStyle", Counted)
    palette, sheet = qapp.palette(), qapp.styleSheet()
    try:
        for look in (LIGHT, DARK, LIGHT, DARK):
            theme_module.apply_theme(qapp, look)
    finally:
        qapp.setStyleSheet(sheet)
        qapp.setPalette(palette)
    assert len(made) <= 1


def test_every_check_box_grows_with_projector_type(qtbot, make_window):
    """At 20-point type a fixed 13-pixel box is lost beside its label: in the window and in
    the export dialog each check box's box is at least 0.8 of its text's height."""
    from PySide6.QtGui import QFont
    from PySide6.QtWidgets import QCheckBox, QStyle, QStyleOptionButton

    from mha_explorer.qt.shell.export_dialog import ExportDialog

    window = make_window(wait=False)
    font = QApplication.font()
    QApplication.setFont(QFont(font.family(), 26))
    try:
        dialog = ExportDialog(window._export_folder(), window)
        qtbot.addWidget(dialog)
        boxes = window.findChildren(QCheckBox) + dialog.findChildren(QCheckBox)
        assert len(boxes) >= 6  # cross, causal, bias, the variant switches, the export's
        for box in boxes:
            option = QStyleOptionButton()
            box.initStyleOption(option)
            square = box.style().subElementRect(QStyle.SubElement.SE_CheckBoxIndicator, option, box)
            assert min(square.width(), square.height()) >= 0.8 * box.fontMetrics().height() - 1, box.text()
    finally:
        QApplication.setFont(font)
