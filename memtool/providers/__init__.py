"""Providers: compressors, embedders and token counters behind small Protocols.

Built-ins are registered through the `memtool.compressors` / `memtool.embedders` entry points in
pyproject.toml, exactly as a third-party plugin would register its own. Nothing heavy is imported
until a provider is actually built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Protocol, runtime_checkable

from memtool.constants import AUTO_EMBEDDER
from memtool.errors import ConfigError

if TYPE_CHECKING:
    from datetime import datetime

    import numpy as np

    from memtool.config import Settings
    from memtool.models import Entities


@dataclass
class Compressed:
    """What a compressor returns; the Memory adds id, timestamps, token counts and provenance."""

    summary: str
    keywords: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    action_items: list[str] = field(default_factory=list)
    entities: "Entities | None" = None
    importance: str = "medium"


@dataclass
class Hints:
    """What the store knows that helps a compressor; a compressor may ignore any of it."""

    when: "datetime | None" = None  # when the session happened (to resolve "yesterday")
    doc_freq: Mapping[str, int] = field(default_factory=dict)  # word -> entries already containing it
    n_docs: int = 0  # entries in the store


@runtime_checkable
class Compressor(Protocol):
    name: str  # registry name, e.g. "local"
    model: str  # recorded in each entry

    @classmethod
    def from_settings(cls, settings: "Settings", root: Path) -> "Compressor": ...

    def compress(self, text: str, hints: Hints | None = None) -> Compressed: ...


@runtime_checkable
class Embedder(Protocol):
    name: str
    model: str  # recorded in each embedding file
    dim: int
    semantic_weight: float  # the weight its similarity earns in search's semantic stage when the setting is -1 (memtool.search.semantic)
    reason: str | None  # why this machine cannot run it (every embed call fails: search by words only); None: it runs

    @classmethod
    def from_settings(cls, settings: "Settings", root: Path) -> "Embedder": ...

    def embed_documents(self, texts: list[str]) -> "np.ndarray":
        """float32 array (len(texts), dim), rows L2-normalised."""

    def embed_query(self, text: str) -> "np.ndarray":
        """float32 array (dim,), L2-normalised."""


@runtime_checkable
class TokenCounter(Protocol):
    def count_tokens(self, text: str) -> int: ...


COMPRESSOR_GROUP = "memtool.compressors"
EMBEDDER_GROUP = "memtool.embedders"
REGISTERED: dict[str, dict[str, type]] = {COMPRESSOR_GROUP: {}, EMBEDDER_GROUP: {}}  # register(): this process only


def _entry_points(group: str):
    from importlib.metadata import entry_points  # ~30 ms: only when a provider is actually built

    return entry_points(group=group)


def available(group: str) -> list[str]:
    return sorted([ep.name for ep in _entry_points(group)] + [*REGISTERED[group]] + ([AUTO_EMBEDDER] if group == EMBEDDER_GROUP else []))


def register(group: str, name: str, cls: type) -> Callable[[], object]:
    """Add a provider class under `name` in this process only (an application embedding memtool, a test's
    fake), as a plugin's entry point adds one for every process; returns the call that removes it. A name
    registered here is never pinned in memory/config.yaml (no other process could build it)."""
    REGISTERED[group][name] = cls
    return lambda: REGISTERED[group].pop(name, None)


# The providers memtool ships, exactly as pyproject.toml registers them under the entry-point groups
# (a test keeps the two identical). Resolving these names here spares every command the ~20 ms
# importlib.metadata scan; any other name is looked up among installed plugins' entry points.
BUILTINS = {
    COMPRESSOR_GROUP: {
        "local": "memtool.providers.local:LocalCompressor",
        "gemini": "memtool.providers.gemini:GeminiCompressor",
        "openai": "memtool.providers.openai:OpenAICompressor",
    },
    EMBEDDER_GROUP: {
        "wordllama": "memtool.providers.wordllama:WordLlamaEmbedder",
        "gemini": "memtool.providers.gemini:GeminiEmbedder",
        "e5": "memtool.providers.e5:E5Embedder",
    },
}


def _load(group: str, name: str, kind: str):
    if name in REGISTERED[group]:
        return REGISTERED[group][name]
    target = BUILTINS[group].get(name)
    if target is not None:
        import importlib

        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)
    for ep in _entry_points(group):
        if ep.name == name:
            return ep.load()
    raise ConfigError(f"unknown {kind} '{name}'. Available: {', '.join(available(group)) or 'none (is memtool installed?)'}")


def build_compressor(name: str, settings: "Settings", root: Path) -> Compressor:
    return _load(COMPRESSOR_GROUP, name, "compressor").from_settings(settings, root)


def build_embedder(name: str, settings: "Settings", root: Path) -> Embedder:
    """The embedder `name` names; `auto`: the one this store already uses, else e5 where it runs, else
    wordllama (memtool.providers.auto)."""
    if name == AUTO_EMBEDDER:
        from memtool.providers.auto import choose_embedder

        name = choose_embedder(root)
    if name == "e5":  # the store's model, never swapped for another here: without e5, search by words
        from memtool.providers.auto import WordsOnlyEmbedder, why_e5_cannot_run

        if why_e5_cannot_run() is not None:
            return WordsOnlyEmbedder.from_settings(settings, root)
    return _load(EMBEDDER_GROUP, name, "embedder").from_settings(settings, root)
