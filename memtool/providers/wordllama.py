"""The default embedder: WordLlama static token embeddings (256-dim), offline, numpy only.

WordLlama ships its weights in its wheel. Its default loader looks in the wrong folder and tries a
download, so it is loaded with `cache_dir=<package dir>, disable_download=True`.

Inference is a token-embedding lookup plus mean pooling, so after the first load we export the
embedding matrix (.npy) and tokenizer (.json) into the derived cache and memory-map them: a cold
`memory search` then embeds its query without importing wordllama at all. The vectors are the
same as `WordLlama.embed(texts, norm=True)` (tested).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

CONFIG = "l2_supercat"
DIM = 256
BATCH = 256


class WordLlamaEmbedder:
    name = "wordllama"
    model = f"wordllama-{CONFIG}-{DIM}"
    dim = DIM

    def __init__(self, cache_dir: Path | None = None):
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._matrix: np.ndarray | None = None
        self._tokenizer = None

    @classmethod
    def from_settings(cls, settings, root: Path) -> "WordLlamaEmbedder":
        from memtool.config import user_cache_dir

        return cls(user_cache_dir() / "models")

    # -- loading ---------------------------------------------------------------------------------
    def _files(self) -> tuple[Path, Path] | None:
        if self.cache_dir is None:
            return None
        return self.cache_dir / f"{self.model}.npy", self.cache_dir / f"{self.model}.tokenizer.json"

    def _load(self) -> None:
        if self._matrix is not None:
            return
        files = self._files()
        if files and files[0].is_file() and files[1].is_file():
            from tokenizers import Tokenizer

            self._matrix = np.load(files[0], mmap_mode="r")
            self._tokenizer = Tokenizer.from_file(str(files[1]))
        else:
            wl = load_wordllama()
            self._matrix = np.ascontiguousarray(wl.embedding, dtype=np.float32)
            self._tokenizer = wl.tokenizer
            if files:
                self._export(files)
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()

    def _export(self, files: tuple[Path, Path]) -> None:
        from memtool.fsutil import atomic_write_bytes, atomic_write_text
        import io

        buf = io.BytesIO()
        np.save(buf, self._matrix)
        atomic_write_bytes(files[0], buf.getvalue())
        atomic_write_text(files[1], self._tokenizer.to_str())

    # -- Embedder protocol -------------------------------------------------------------------------
    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Mean of the token vectors of each text, L2-normalised (WordLlama's `embed(norm=True)`).

        Token ids of a batch are concatenated and summed per text with np.add.reduceat, so no
        padding is materialised."""
        self._load()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        last = self._matrix.shape[0] - 1
        for i in range(0, len(texts), BATCH):
            enc = self._tokenizer.encode_batch(texts[i : i + BATCH], add_special_tokens=False)
            lengths = np.array([len(e.ids) for e in enc], dtype=np.int64)
            if not lengths.any():
                continue
            ids = np.clip(np.fromiter((t for e in enc for t in e.ids), dtype=np.int64, count=int(lengths.sum())), 0, last)
            nonempty = np.flatnonzero(lengths)
            starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[nonempty]
            sums = np.add.reduceat(np.asarray(self._matrix[ids], dtype=np.float32), starts, axis=0)
            pooled = sums / lengths[nonempty, None]
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[i + nonempty] = np.divide(pooled, norms, out=np.zeros_like(pooled), where=norms > 0)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def load_wordllama():
    """Load WordLlama offline from the weights inside its own package."""
    import logging

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    import wordllama
    from wordllama import WordLlama

    # wordllama calls logging.basicConfig() on import, which would print every library's debug log
    # (bm25s logs at DEBUG) to our users' stderr: take the root logger back to how it was.
    for h in root.handlers[:]:
        if h not in handlers:
            root.removeHandler(h)
    root.setLevel(level)

    return WordLlama.load(config=CONFIG, dim=DIM, cache_dir=Path(wordllama.__file__).parent, disable_download=True)
