"""Shared fixtures. Every test runs with the memory root and HOME inside its own tmp_path."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pytest

from memtool.errors import ProviderError
from memtool.providers import Compressed
from tests.gemini_fake import gemini_server  # noqa: F401  (the fake Gemini server, a fixture for every test)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """Point HOME, the user's config folder (XDG_CONFIG_HOME: their own config.yaml and the approved
    repository configs) and the memory root at tmp_path; drop any real API keys and MEMTOOL_ settings."""
    home = tmp_path / "home"
    home.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)  # the personal memory: HOME/.local/share/memtool, none unless a test makes it
    monkeypatch.setenv("MEMTOOL_ROOT", str(root))
    monkeypatch.chdir(root)
    import os

    for var in list(os.environ):
        if var.startswith("MEMTOOL_") and var != "MEMTOOL_ROOT":
            monkeypatch.delenv(var)
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("MEMTOOL_BACKGROUND_EMBED", "false")  # no detached vector fill (memtool/search/fill.py) unless a test asks
    return root


@pytest.fixture
def root(isolated_home):
    return isolated_home


class FakeEmbedder:
    """Deterministic bag-of-words hashing embedder: same words -> similar vectors. No model, no network."""

    name = "fake"
    model = "fake-hash-64"
    dim = 64
    semantic_weight = 0.0
    reason = None

    def __init__(self, model: str = "fake-hash-64", dim: int = 64):
        self.model, self.dim = model, dim
        self.calls = 0

    @classmethod
    def from_settings(cls, settings, root) -> "FakeEmbedder":
        return cls()

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            h = int(hashlib.md5(word.encode()).hexdigest(), 16)
            v[h % self.dim] += 1.0 if (h >> 8) & 1 else -1.0
        n = np.linalg.norm(v)
        return v / n if n else v

    def embed_documents(self, texts):
        self.calls += 1
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text):
        return self._vec(text)


class RecordingEmbedder(FakeEmbedder):
    """FakeEmbedder that remembers every document text it embedded; can fail after `fail_after` calls."""

    def __init__(self, model: str = "fake-hash-64", dim: int = 64, fail_after: int | None = None):
        super().__init__(model, dim)
        self.texts: list[str] = []
        self.fail_after = fail_after

    def embed_documents(self, texts):
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise ProviderError("embedder went away")
        self.texts.extend(texts)
        return super().embed_documents(texts)


class FakeCompressor:
    """Deterministic compressor: first sentence as summary, capitalised words as keywords."""

    name = "fake"
    model = "fake-compressor"

    def compress(self, text: str, hints=None) -> Compressed:
        first = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0][:200]
        words = sorted({w.lower() for w in re.findall(r"\b[A-Z][a-z]{2,}\b", text)})[:8]
        return Compressed(summary=first, keywords=words, topics=["general"])


@pytest.fixture(autouse=True)
def fake_auto_embedder(request, monkeypatch):
    """In this process, `embedder: auto` (the default) builds a FakeEmbedder for a new store or a store of
    fake vectors, so tests not about the embedder do not run the real e5 model (~50 ms a passage on a busy
    2-core machine, seconds a test). A store of e5 or WordLlama vectors (made by a `memory` subprocess, which
    this does not reach) keeps its own. Tests of the real default are marked `real_embedder`."""
    if request.node.get_closest_marker("real_embedder"):
        return
    from memtool import providers
    from memtool.providers import auto

    real_choice = auto.choose_embedder

    def choose_embedder(root):
        return "fake" if auto.stored_model(root) in (None, FakeEmbedder.model) else real_choice(root)

    monkeypatch.setattr(auto, "choose_embedder", choose_embedder)
    # registered in this process only: `memory init` never pins it (a real `memory` process could not build it)
    request.addfinalizer(providers.register(providers.EMBEDDER_GROUP, "fake", FakeEmbedder))


@pytest.fixture
def fake_embedder():
    return FakeEmbedder()


@pytest.fixture
def fake_compressor():
    return FakeCompressor()


def shared_model_cache(tmp_path_factory) -> Path:
    """A model cache shared by the test session, WordLlama's matrix exported there (once)."""
    from memtool.providers.wordllama import WordLlamaEmbedder

    cache = tmp_path_factory.getbasetemp() / "xdg-cache"
    WordLlamaEmbedder(cache / "memtool" / "models").embed_documents(["warm up"])  # exports the matrix once
    return cache


@pytest.fixture
def model_cache(tmp_path_factory, monkeypatch) -> Path:
    """XDG_CACHE_HOME of this process pointed at the shared model cache: a WordLlama built in the test
    memory-maps the exported matrix instead of exporting it again into the test's own HOME."""
    cache = shared_model_cache(tmp_path_factory)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


@pytest.fixture
def env(root, tmp_path_factory):
    """Environment for `memory` subprocesses: this root, the offline providers (WordLlama: a subprocess
    cannot reach the tests' fake embedder), and the shared model cache."""
    import os

    e = dict(os.environ)
    e.update(MEMTOOL_ROOT=str(root), MEMTOOL_EMBEDDER="wordllama", MEMTOOL_COMPRESSOR="local", XDG_CACHE_HOME=str(shared_model_cache(tmp_path_factory)))
    return e


# -- where an entry's files live (memtool.store.Layout: month folders, binary vectors) -----------------
def embedding_path(root, entry_id: str) -> Path:
    from memtool.store import Layout

    return Layout(Path(root)).embedding_file(entry_id)


def transcript_path(root, entry_id: str) -> Path:
    from memtool.store import Layout

    return Layout(Path(root)).transcript_file(entry_id)


def read_vector_at(path: Path) -> dict:
    """A vector file's header fields and its "embedding" (float32 array)."""
    from memtool.store import parse_vector

    return parse_vector(path, Path(path).read_bytes())
