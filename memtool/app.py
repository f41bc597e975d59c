"""The composition root: find the memory root, read settings, build providers, hand out a Memory."""

from __future__ import annotations

import os
from dataclasses import fields, replace
from pathlib import Path

from memtool import constants as C
from memtool.config import Settings, load_settings
from memtool.errors import ConfigError
from memtool.memory import Memory
from memtool.providers import Compressor, build_compressor, build_embedder
from memtool.store import Layout


def resolve_root(root: str | Path | None = None) -> Path:
    """--root, else $MEMTOOL_ROOT, else the nearest folder upwards from here holding memory/."""
    if root:
        return Path(root).expanduser().resolve()
    env = os.environ.get(C.ENV_ROOT)
    if env:
        return Path(env).expanduser().resolve()
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / C.MEMORY_DIR / C.INDEX_DIR).is_dir():
            return folder
    return here


def open_memory(root: str | Path | None = None, *, require: bool = True, settings: Settings | None = None, embedder=None, compressor=None, **overrides) -> Memory:
    """Build a Memory. `embedder` / `compressor` inject providers (tests, plugins); `overrides` set settings fields."""
    layout = Layout(resolve_root(root))
    if require:
        layout.require()
    settings = settings or load_settings(layout.root)
    unknown = set(overrides) - {f.name for f in fields(Settings)}
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    settings = replace(settings, **overrides)
    embedder = embedder or build_embedder(settings.embedder, settings, layout.root)
    built: dict[str, Compressor] = {}

    def compressor_for(name: str) -> Compressor:
        if compressor is not None and name == settings.compressor:
            return compressor
        if name not in built:
            built[name] = build_compressor(name, settings, layout.root)
        return built[name]

    return Memory(layout, settings, compressor_for, embedder)
