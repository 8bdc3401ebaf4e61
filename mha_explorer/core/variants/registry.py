"""The attention families the app knows, and the one way to find a config's family (no torch).

Adding a family means writing its package (its family object, arithmetic, listing and compute)
and naming it in ``FAMILIES``; the config's rules, the window's form, the command line's
flags, the plan, the engine and the reference code all iterate this tuple.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mha_explorer.core.errors import ConfigError
from mha_explorer.core.variants.family import AttentionFamily, VariantField
from mha_explorer.core.variants.grouped import GROUPED
from mha_explorer.core.variants.latent import LATENT

if TYPE_CHECKING:
    from mha_explorer.core.config.record import MHAConfig

FAMILIES: tuple[AttentionFamily, ...] = (GROUPED, LATENT)
KINDS: tuple[str, ...] = tuple(kind for family in FAMILIES for kind in family.kinds)  # "MHA", ..., "MLA"


def family_of(cfg: MHAConfig) -> AttentionFamily:
    """The family ``cfg`` belongs to: the one whose switch is on, else the default (first) one."""
    for family in FAMILIES:
        if family.switch is not None and getattr(cfg, family.switch):
            return family
    return FAMILIES[0]


def family_named(kind: str) -> AttentionFamily:
    """The family whose member is called ``kind`` ("MHA", "gqa", "MLA", ...)."""
    for family in FAMILIES:
        if kind.upper() in family.kinds:
            return family
    raise ValueError(f"{kind!r} is not one of {', '.join(KINDS)}")


def kind_of(cfg: MHAConfig) -> str:
    return family_of(cfg).kind(cfg)


def changes_for(kind: str, cfg: MHAConfig) -> dict[str, Any]:
    """The edit that makes ``cfg`` the kind of attention called ``kind``: the other families'
    switches off and their own sizes cleared, then the chosen family's changes."""
    target = family_named(kind)
    changes: dict[str, Any] = {}
    for family in FAMILIES:
        if family is not target:
            changes.update(family.leave())
    changes.update(target.changes_for(kind.upper(), cfg))
    return changes


def variant_fields() -> tuple[VariantField, ...]:
    """Every field a family owns, family by family: the form and the command line offer these."""
    return tuple(f for family in FAMILIES for f in family.fields)


def check_families(cfg: MHAConfig) -> None:
    """Every family's rules, then: no family's own fields set on another family's config."""
    owner = family_of(cfg)
    for family in FAMILIES:
        family.check(cfg, family is owner)
    for family in FAMILIES:
        given = [f for f in family.fields if getattr(cfg, f.name) != f.default]
        if family is not owner and given:
            name = given[0].name
            raise ConfigError(name, f"{name} belongs to {family.title.lower()} and this layer is "
                              f"{owner.kind(cfg)}; clear {name} or switch to {family.kinds[0]}",
                              [{name: given[0].default}])


def plan_summaries(cfg: MHAConfig) -> dict[str, dict | None]:
    """The extra figures ``shapes --json`` lists under each family that has some; the latent
    family's are under "mla", as scripts have always read them."""
    return {"mla": LATENT.summary(cfg) if family_of(cfg) is LATENT else None}
