"""d_k and the MHA / GQA / MQA choice in the configuration form, for the config's family of
attention: shown where they apply, greyed out with the reason where they do not (MLA)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_explorer.core.config import MHAConfig
from mha_explorer.core.variants.registry import family_of
from mha_explorer.qt.panels.config_fields import KV_MODES, KV_TIPS, kv_note

if TYPE_CHECKING:
    from mha_explorer.qt.panels.configuration import ControlsPanel


def show_head_sharing(panel: ControlsPanel, cfg: MHAConfig, kv_mode: str) -> None:
    """d_k and the MHA / GQA / MQA choice (``kv_mode`` the one picked), where the config's
    family has them; a family that rebuilds keys and values per head (MLA) greys them out
    and says why."""
    family = family_of(cfg)
    shares = all(mode in family.kinds for mode in KV_MODES)
    panel.kv_group.setExclusive(shares)  # none checked is allowed only while none applies
    for mode, button in panel.kv_buttons.items():
        button.setChecked(shares and mode == kv_mode)
        button.setEnabled(shares)
        button.setToolTip(KV_TIPS[mode] if shares else
                          f"Not for {family.title}: {family.kind_tips[family.kind(cfg)]}. "
                          "Choose MHA under Attention to share key/value heads.")
    panel.kv_spin.setEnabled(shares and kv_mode == "GQA")
    if shares:
        panel.d_k_label.setText(f"d_k = {cfg.d_k:,}")
        panel.d_k_label.setToolTip("d_k = D / H: the width of one head")
        panel.kv_note.setText(kv_note(cfg))
        panel.kv_note.setToolTip("How many query heads read each key/value head")
        return
    widths = family.widths(cfg)
    kind = family.kind(cfg)
    # short beside the spin box (a long line widened the form past its dock); in full on hover
    panel.d_k_label.setText(f"q·k {widths.qk:,}, v {widths.v:,}")
    panel.d_k_label.setToolTip(f"{kind}: each head's query·key width {widths.qk:,} and value "
                              f"width {widths.v:,}; {family.title} sets them itself (its own "
                              "fields under Attention), not D / H")
    # one line in the narrow form (four wrapped lines were clipped there); the why on hover
    panel.kv_note.setText(f"No K/V head sharing in {kind}")
    panel.kv_note.setToolTip(family.kind_tips[kind])
