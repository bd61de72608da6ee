"""Lock providers and conflict policies by name: evonb's own, and those installed packages register.

A table names its lock provider (``evonb.lock.provider``) and its conflict policy
(``evonb.conflict.policy``) by a *name*, never by a module: anyone who can write the table's
folder can change those names, and the process that opens the table must not run code they
choose. A name is one of evonb's built-ins or the name of an entry point that an installed
package registers, in the group ``evonb.lock_providers`` or ``evonb.conflict_policies``::

    [project.entry-points."evonb.conflict_policies"]
    accept-all = "mypackage.policies:AcceptAll"

Checking a name reads the installed packages' metadata only; the entry point's module is
imported when the table first uses it. A distribution found inside the table's own folder
(e.g. when the table folder is the working directory) is not used.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

from evonb.errors import EvoError, UnknownPluginError

LOCK_PROVIDERS_GROUP = "evonb.lock_providers"
CONFLICT_POLICIES_GROUP = "evonb.conflict_policies"


@dataclass(frozen=True)
class PluginKind:
    """One kind of plug-in: what it is called, the table property naming it, its entry point
    group, the built-in names, the name used when the property is not set, and what kind of
    setting names it (``source``: a table property, or an environment variable)."""

    what: str
    property: str
    group: str
    builtin: Collection[str]
    default: str
    source: str = "Table property"


def plugin_key(name: str | None, default: str) -> str:
    """The lookup key of a name: trimmed and lower-cased (``None`` or empty: ``default``)."""
    return (name or "").strip().lower() or default


def _inside(dist_root: Path, folder: Path) -> bool:
    try:
        return dist_root.resolve().is_relative_to(folder.resolve())
    except OSError:
        return True  # cannot tell: do not use it


def registered(group: str, *, outside: Path | None = None) -> dict[str, EntryPoint]:
    """The entry points of ``group`` by lower-cased name; with ``outside``, those of
    distributions located inside that folder are left out."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=group):
        dist = ep.dist
        if outside is not None and dist is not None and _inside(
                Path(str(dist.locate_file(""))), outside):
            continue
        found.setdefault(ep.name.strip().lower(), ep)
    return found


def known_names(kind: PluginKind, *, outside: Path | None = None) -> list[str]:
    """Every name ``kind`` accepts now: built-ins and registered entry points, sorted."""
    return sorted({*kind.builtin, *registered(kind.group, outside=outside)})


def check_name(kind: PluginKind, name: str | None, *, outside: Path | None = None) -> str:
    """The key of ``name`` if it is a built-in or registered name, else
    :class:`UnknownPluginError` (nothing is imported either way)."""
    key = plugin_key(name, kind.default)
    if key in kind.builtin:
        return key
    if key not in registered(kind.group, outside=outside):
        raise UnknownPluginError(kind.property, str(name), known_names(kind, outside=outside),
                                 what=kind.what, group=kind.group, source=kind.source)
    return key


def load(kind: PluginKind, name: str | None, *, outside: Path | None = None) -> object:
    """The object a registered entry point names (its module imported now). ``name`` must not
    be a built-in; an unknown name raises :class:`UnknownPluginError`."""
    key = plugin_key(name, kind.default)
    eps = registered(kind.group, outside=outside)
    ep = eps.get(key)
    if ep is None:
        raise UnknownPluginError(kind.property, str(name), known_names(kind, outside=outside),
                                 what=kind.what, group=kind.group, source=kind.source)
    try:
        target = ep.load()
    except Exception as exc:
        package = ep.dist.name if ep.dist is not None else "its package"
        raise EvoError(f"Cannot load {kind.what} {key!r} ({ep.value}, registered by "
                       f"{package}): {type(exc).__name__}: {exc}",
                       hint=f"reinstall {package}, or set {kind.property} to another "
                            f"{kind.what}") from None
    if not callable(target):
        raise EvoError(f"The {kind.what} {key!r} ({ep.value}) is not a class or callable",
                       hint=f"fix the entry point in group {kind.group!r}")
    return target


__all__ = [
    "CONFLICT_POLICIES_GROUP",
    "LOCK_PROVIDERS_GROUP",
    "PluginKind",
    "check_name",
    "known_names",
    "load",
    "plugin_key",
    "registered",
]
