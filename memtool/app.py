"""The composition root: the memory root (memtool.roots), settings, providers, hand out a Memory.

It builds the roots a command reads together, too: the project's (or, outside any project, the
personal one), its private entries (memory/.private) and the personal memory ($XDG_DATA_HOME/memtool)
with its private entries, as `Memory.companions`; and the root a write goes to (`personal`, `private`).
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

from memtool import constants as C
from memtool.config import Settings, checked, load_settings
from memtool.errors import BadInput, NotFound
from memtool.memory import Memory
from memtool.providers import Compressor, build_compressor, build_embedder
from memtool.roots import found_root, personal_root, private_root, resolve_root
from memtool.scaffold import init, init_private
from memtool.store import Layout

LOCAL_CACHE = "sqlite"  # the personal memory and private entries are never in a cache a team shares


def open_memory(
    root: str | Path | None = None,
    *,
    settings: Settings | None = None,
    embedder=None,
    compressor=None,
    personal: bool = False,
    private: bool = False,
    **overrides,
) -> Memory:
    """Build a Memory. `embedder` / `compressor`: a provider to inject (tests, plugins), or the registered
    name of one (as the settings of the same names take it); `overrides` set settings fields.
    `personal`: the personal memory (made if missing), where `--personal` writes; `private`: the private
    entries of the root chosen (made if missing), where `--private` writes. Otherwise the Memory of the
    project (or, outside any project, of the personal memory) with the other roots it reads beside it."""
    if isinstance(embedder, str):
        overrides["embedder"], embedder = embedder, None
    if isinstance(compressor, str):
        overrides["compressor"], compressor = compressor, None
    named = resolve_root(root)

    def with_overrides(given: Settings) -> Settings:
        return replace(given, **{name: checked(name, value, f"option {name}") for name, value in overrides.items()})

    base = with_overrides(settings or load_settings(named))
    home = personal_home(base) if personal else personal_root(base.personal_root)
    if home is not None and (personal or (not found_root(root) and outside_home(base) is not None)):
        if not Layout(home).is_memory_root():
            init(home)
        named, base = home, with_overrides(settings or load_settings(home))
    settings = base
    layout = Layout(named).require()
    if named == home:
        settings = replace(settings, cache=LOCAL_CACHE)
    embedder = embedder or build_embedder(settings.embedder, settings, layout.root)

    @cache
    def compressor_for(name: str) -> Compressor:
        if compressor is not None and name == settings.compressor:
            return compressor
        return build_compressor(name, settings, layout.root)

    def memory_at(path: Path, origin: str, is_private: bool = False, prefix: str = "") -> Memory:
        local = settings if path == layout.root else replace(settings, cache=LOCAL_CACHE)
        return Memory(Layout(path), local, compressor_for, embedder, origin=origin, private=is_private, ref_prefix=prefix)

    origin = "personal" if named == home else "project"
    if private:
        return memory_at(init_private(layout.root), origin, True)
    main = memory_at(layout.root, origin)
    inner = f"{C.MEMORY_DIR}/{C.PRIVATE_DIR}/"  # the ids of a root's private Markdown hits: a folder of that root
    roots = [(private_root(layout.root), origin, True, inner)]
    if home is not None and home != layout.root:  # "personal:memory/2026-12-02.md#L2": never the project's file of that name
        roots += [(home, "personal", False, C.PERSONAL_REF), (private_root(home), "personal", True, f"{C.PERSONAL_REF}{inner}")]
    main.companions = [memory_at(*given) for given in roots if Layout(given[0]).is_memory_root()]
    return main


def outside_home(settings: Settings) -> Path | None:
    """The root commands outside any project use: the personal memory, when it exists and the setting
    personal_outside_projects says so; else None."""
    home = personal_root(settings.personal_root)
    return home if settings.personal_outside_projects and home is not None and Layout(home).is_memory_root() else None


def existing_personal(root: str | Path | None = None) -> Path:
    """The personal memory's root, for a command that reads it (`memory stats --personal`): NotFound
    while it does not exist yet (nothing is made), BadInput when the setting turns it off."""
    home = personal_home(load_settings(resolve_root(root)))
    if not Layout(home).is_memory_root():
        raise NotFound(f"there is no personal memory yet (at {home}): `memory init --personal` makes it")
    return home


def personal_home(settings: Settings) -> Path:
    """The personal memory's root (`memory init --personal` makes it), or BadInput when the setting turns it off."""
    home = personal_root(settings.personal_root)
    if home is None:
        raise BadInput("the setting personal_root is 'off': there is no personal memory; set it in ~/.config/memtool/config.yaml or MEMTOOL_PERSONAL_ROOT")
    return home
