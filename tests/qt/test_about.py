"""Help → About names every trained model with its download and licence, and shows Gemma's
Terms of Use from the package that ships them (the model's licence asks for that)."""

from __future__ import annotations

from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.licences import terms_text
from mha_explorer.qt.shell.about_dialog import AboutDialog


def test_about_names_every_model_and_its_licence(shared_window, qtbot):
    window = shared_window
    window.actions["about"].trigger()
    dialog = window.findChild(AboutDialog, "about_dialog")
    text = dialog.browser.toPlainText()
    for model in MODELS.values():
        assert model.name in text
        assert model.distribution.licence in text


def test_the_terms_of_use_open_in_full(shared_window, qtbot):
    window = shared_window
    dialog = window.show_about()
    gemma = MODELS["gemma3-270m"]
    button = dialog.terms_buttons[gemma.key]
    text = terms_text(gemma)
    assert button.isEnabled() == (text is not None)
    if text is not None:
        button.click()
        assert "Gemma Terms of Use" in dialog.browser.toPlainText()
        assert len(dialog.browser.toPlainText()) > 2000  # the whole text, not a line about it
        dialog.findChild(type(button), "about_page").click()
        assert "Trained models" in dialog.browser.toPlainText()
