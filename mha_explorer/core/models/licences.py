"""Each trained model's licence, for the About box and the README (no torch).

The licence's full text is read from the installed package that ships it, so what the app
shows is the text the person actually installed.
"""

from __future__ import annotations

import importlib.metadata

from mha_explorer.core.models.catalog import MODELS
from mha_explorer.core.models.description import ModelDescription
from mha_explorer.core.models.runtime import is_available

TERMS_LIMIT = 2 << 20  # bytes: a licence page, not a file to read without bound


def terms_text(model: ModelDescription) -> str | None:
    """The licence text the model's main package ships, or None (no such file, not installed)."""
    dist = model.distribution
    if dist.terms_file is None:
        return None
    try:
        path = importlib.metadata.distribution(dist.packages[0]).locate_file(dist.terms_file)
        with open(str(path), "rb") as handle:
            return handle.read(TERMS_LIMIT).decode("utf-8", errors="replace")
    except (importlib.metadata.PackageNotFoundError, OSError):
        return None


def about_models() -> str:
    """Markdown: every model the app can show, whether it is installed, its size and licence."""
    lines = []
    for model in MODELS.values():
        available, _why = is_available(model)
        dist = model.distribution
        state = "installed" if available else f"not installed — `{dist.install_hint}`"
        lines.append(f"- **{model.name}** ({state}): {dist.download}. Licence: {dist.licence}.")
    return "\n".join(lines)
