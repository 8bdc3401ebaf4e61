"""The stage timeline: the config's stages as buttons (nine for MHA; more with positions,
RoPE or latent attention), with previous / play / next and a speed.

The buttons take no keyboard focus: the main window owns Left, Right, Home, End
and Space as shortcuts, and a focused button would otherwise eat Space (and fire
twice: once as its own click, once as the shortcut).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QStyle,
    QToolButton,
    QWidget,
)

from mha_explorer.core.text.tables import STAGE_LABELS, stage_label
from mha_explorer.qt.controller import SPEEDS, Controller
from mha_explorer.qt.panels.stage_rows import StageRows


def speed_text(speed: float) -> str:
    return f"{speed:g}×"


class StageStepper(QWidget):
    """A row: back, play/pause, next, the config's stages, and the playback speed."""

    def __init__(self, controller: Controller, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("stage_stepper")
        # never taller than its rows: a dock restored from presentation's larger type (leaving
        # a window started with --present) stretched the buttons to twice their height
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self._controller = controller
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.setSpacing(4)

        icons = self.style()
        self.prev_button = self._tool_button(
            "prev_stage", "Back", icons.standardIcon(QStyle.StandardPixmap.SP_MediaSeekBackward),
            "Previous stage", "Step back one stage (Left arrow)")
        self.play_button = self._tool_button(
            "play", "Play", icons.standardIcon(QStyle.StandardPixmap.SP_MediaPlay),
            "Play or pause", "Play the stages one after another, or pause (Space)")
        self.play_button.setCheckable(True)
        self.next_button = self._tool_button(
            "next_stage", "Next", icons.standardIcon(QStyle.StandardPixmap.SP_MediaSeekForward),
            "Next stage", "Step forward one stage (Right arrow)")
        for button in (self.prev_button, self.play_button, self.next_button):
            layout.addWidget(button)
        layout.addSpacing(8)

        self.stage_group = QButtonGroup(self)
        self.stage_group.setExclusive(True)
        self.stage_buttons: dict[str, QToolButton] = {}
        self._stage_ids: tuple[str, ...] = ()
        # the phases (past, current, future) are coloured by the theme's style sheet
        self.timeline = StageRows(spacing=3)  # wraps when the stages outgrow one row
        self._build_stage_buttons()
        layout.addWidget(self.timeline, 1)
        layout.addSpacing(8)

        self.speed_label = speed_label = QLabel("Speed")
        self.speed_combo = QComboBox()
        self.speed_combo.setObjectName("speed")
        self.speed_combo.setAccessibleName("Playback speed")
        self.speed_combo.setToolTip("How fast Play moves through the stages")
        # reachable with Tab, but a mouse click leaves the focus (and Space) to the window
        self.speed_combo.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        for speed in SPEEDS:
            self.speed_combo.addItem(speed_text(speed), speed)
        speed_label.setBuddy(self.speed_combo)
        layout.addWidget(speed_label)
        layout.addWidget(self.speed_combo)

        self.prev_button.clicked.connect(controller.previous_stage)
        self.next_button.clicked.connect(controller.next_stage)
        self.play_button.clicked.connect(lambda: controller.toggle_play())
        self.stage_group.idClicked.connect(controller.set_stage)
        self.speed_combo.currentIndexChanged.connect(
            lambda i: controller.set_speed(self.speed_combo.itemData(i)))

        controller.stage_changed.connect(self._show_stage)
        controller.playing_changed.connect(self._show_playing)
        controller.speed_changed.connect(self._show_speed)
        controller.config_changed.connect(self._describe_stages)
        self._describe_stages()
        self._show_stage(controller.stage)
        self._show_playing(controller.playing)
        self._show_speed(controller.speed)

    COMPACT_PADDING = "padding: 4px 3px;"  # the theme's 5 px 8 px, less at the sides

    def set_compact(self, compact: bool) -> None:
        """Presentation: only play and the nine stages, with narrow padding, so the
        stages fit a 1024-wide screen at projector type. Back, next and the speed
        stay on their keys (Left, Right) and come back on leaving."""
        for widget in (self.prev_button, self.next_button, self.speed_label, self.speed_combo):
            widget.setVisible(not compact)
        for button in self.stage_buttons.values():
            button.setStyleSheet(self.COMPACT_PADDING if compact else "")
        self.timeline.refit()  # narrower buttons: perhaps one row again

    def _tool_button(self, name: str, text: str, icon, accessible: str, tip: str) -> QToolButton:
        button = QToolButton()
        button.setObjectName(name)
        button.setText(text)
        button.setIcon(icon)
        # icons only (the standard media symbols, named for screen readers and in the
        # tip): the room goes to the nine stages, which must fit a 1024-wide screen
        button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
        button.setAccessibleName(accessible)
        button.setToolTip(tip)
        button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        return button

    def _build_stage_buttons(self) -> None:
        """One button per stage of the plan; rebuilt when an edit changes the list."""
        for button in self.stage_buttons.values():
            self.stage_group.removeButton(button)
            button.hide()  # gone from sight now, not when the deferred delete runs
            button.deleteLater()
        self.stage_buttons = {}
        self._stage_ids = self._controller.plan.stage_ids
        for i, stage_id in enumerate(self._stage_ids):
            button = QToolButton()
            button.setText(stage_label(i, stage_id))
            button.setCheckable(True)
            button.setObjectName(f"stage_{stage_id}")
            button.setAccessibleName(f"Stage {i + 1}: {STAGE_LABELS.get(stage_id, stage_id)}")
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            # equal widths, so the bold current stage never nudges its neighbours
            button.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
            self.stage_group.addButton(button, i)
            self.stage_buttons[stage_id] = button
        self.timeline.set_buttons(list(self.stage_buttons.values()))

    def _describe_stages(self, *_) -> None:
        """Tooltips carry each stage's title and formula, which follow the config."""
        plan = self._controller.plan
        if plan.stage_ids != self._stage_ids:
            self._build_stage_buttons()
            self._show_stage(self._controller.stage)
        for i, stage_id in enumerate(self._stage_ids):
            stage = plan.stage(stage_id)
            self.stage_buttons[stage_id].setToolTip(
                f"<b>{i + 1}. {stage.title}</b><br>{stage.formula}")

    def _show_stage(self, current: str) -> None:
        if current not in self._stage_ids:  # the list is being rebuilt for a new config
            return
        now = self._stage_ids.index(current)
        for i, stage_id in enumerate(self._stage_ids):
            button = self.stage_buttons[stage_id]
            phase = "past" if i < now else "current" if i == now else "future"
            if button.property("phase") != phase:
                button.setProperty("phase", phase)
                button.style().unpolish(button)  # re-read the style sheet for the new phase
                button.style().polish(button)
        self.timeline.refit()  # the current stage's bold name may need a wider button
        self.stage_buttons[current].setChecked(True)
        self.prev_button.setEnabled(now > 0)
        self.next_button.setEnabled(now < len(self._stage_ids) - 1)

    def _show_playing(self, playing: bool) -> None:
        icons = QStyle.StandardPixmap
        pixmap = icons.SP_MediaPause if playing else icons.SP_MediaPlay
        self.play_button.setIcon(self.style().standardIcon(pixmap))
        self.play_button.setText("Pause" if playing else "Play")
        self.play_button.setChecked(playing)

    def _show_speed(self, speed: float) -> None:
        index = self.speed_combo.findData(speed)
        if index >= 0 and index != self.speed_combo.currentIndex():
            self.speed_combo.blockSignals(True)  # a reflection, not a new request
            self.speed_combo.setCurrentIndex(index)
            self.speed_combo.blockSignals(False)
