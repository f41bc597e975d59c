"""The composition root: the memory root (memtool.roots), settings, providers, hand out a Memory."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

from memtool.config import Settings, checked, load_settings
from memtool.memory import Memory
from memtool.providers import Compressor, build_compressor, build_embedder
from memtool.roots import resolve_root
from memtool.store import Layout


def open_memory(root: str | Path | None = None, *, settings: Settings | None = None, embedder=None, compressor=None, **overrides) -> Memory:
    """Build a Memory. `embedder` / `compressor`: a provider to inject (tests, plugins), or the registered
    name of one (as the settings of the same names take it); `overrides` set settings fields."""
    if isinstance(embedder, str):
        overrides["embedder"], embedder = embedder, None
    if isinstance(compressor, str):
        overrides["compressor"], compressor = compressor, None
    layout = Layout(resolve_root(root)).require()
    settings = settings or load_settings(layout.root)
    settings = replace(settings, **{name: checked(name, value, f"option {name}") for name, value in overrides.items()})
    embedder = embedder or build_embedder(settings.embedder, settings, layout.root)

    @cache
    def compressor_for(name: str) -> Compressor:
        if compressor is not None and name == settings.compressor:
            return compressor
        return build_compressor(name, settings, layout.root)

    return Memory(layout, settings, compressor_for, embedder)
