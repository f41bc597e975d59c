"""The default embedder: WordLlama static token embeddings (256-dim), offline, numpy only.

WordLlama ships its weights in its wheel. Its default loader looks in the wrong folder and tries a
download, so it is loaded with `cache_dir=<package dir>, disable_download=True`.

Inference is a token-embedding lookup plus mean pooling, so after the first load we export the
embedding matrix (.npy) and tokenizer (.json) into the derived cache and memory-map them: a cold
`memory search` then embeds its query without importing wordllama at all. The vectors are the
same as `WordLlama.embed(texts, norm=True)` (tested).

The tokenizer has no pre-tokenizer: its BPE runs over a whole text as one word, which is slow on
long texts and caches nothing. Its normaliser only prepends "▁" and turns spaces into "▁", and no
merge joins a piece ending in another character to one starting with "▁" (checked before relying
on it), so a text's tokens are those of its pieces cut before each "▁": batches tokenize each
distinct piece once (~4x faster on entries).
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from memtool import constants as C

CONFIG = "l2_supercat"
DIM = 256
BATCH = 256
MARK = "\u2581"  # the tokenizer's word-start mark: what a space becomes
PIECE_RE = re.compile(f"{MARK}+[^{MARK}]*")  # a normalised text cut before each word start
SUPERSEDED_TOKENIZERS = ("{model}.tokenizer.json",)  # file names of earlier export formats, removed on export


class WordLlamaEmbedder:
    name = "wordllama"
    model = f"{C.WORDLLAMA_MODEL_PREFIX}{CONFIG}-{DIM}"
    dim = DIM
    semantic_weight = C.WORDLLAMA_SEMANTIC_WEIGHT
    reason: str | None = None  # it runs wherever it is installed

    def __init__(self, cache_dir: Path | None = None):
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._matrix: Any = None  # np.ndarray (vocabulary x dim) once loaded: np.load's memory map or a copy
        self._tokenizer: Any = None  # a tokenizers.Tokenizer once loaded
        self._piecewise: bool | None = None  # may texts be tokenized by word pieces? checked on the first batch
        self._pieces: dict[str, list[int]] = {}  # token ids by word piece
        self._specials: list[str] = []  # added tokens: a text holding one goes to the plain encoder

    @classmethod
    def from_settings(cls, settings, root: Path) -> "WordLlamaEmbedder":
        from memtool.config import user_cache_dir

        return cls(user_cache_dir() / "models")

    # -- loading ---------------------------------------------------------------------------------
    def _load(self) -> None:
        if self._matrix is not None:
            return
        cache = self.cache_dir  # tokenizer v2: merges written as "a b" strings (read ~1.5x faster than pairs by a cold search's query)
        files = (cache / f"{self.model}.npy", cache / f"{self.model}.tokenizer.v2.json") if cache else None
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
        import io

        from memtool.fsutil import atomic_write_bytes, atomic_write_text

        buf = io.BytesIO()
        np.save(buf, self._matrix)
        atomic_write_bytes(files[0], buf.getvalue())
        spec = json.loads(self._tokenizer.to_str())
        merges = spec["model"]["merges"]
        if not any(" " in t for pair in merges for t in pair):  # tokens hold no space: "a b" splits back exactly
            spec["model"]["merges"] = [" ".join(pair) for pair in merges]
        atomic_write_text(files[1], json.dumps(spec, ensure_ascii=False))
        for old in SUPERSEDED_TOKENIZERS:  # earlier exports of the same tokenizer: 1.2 MB each, never read again
            (files[0].parent / old.format(model=self.model)).unlink(missing_ok=True)

    # -- Embedder protocol -------------------------------------------------------------------------
    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Mean of the token vectors of each text, L2-normalised (WordLlama's `embed(norm=True)`).

        Token ids of a few texts are concatenated and summed per text with np.add.reduceat, so no
        padding is materialised."""
        self._load()
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        last = self._matrix.shape[0] - 1
        for i in range(0, len(texts), BATCH):
            ids = self._token_ids(texts[i : i + BATCH])
            for j in range(0, len(ids), C.WORDLLAMA_POOL_TEXTS):
                part = ids[j : j + C.WORDLLAMA_POOL_TEXTS]
                lengths = np.fromiter(map(len, part), dtype=np.int64, count=len(part))
                if not lengths.any():
                    continue
                flat = np.clip(np.fromiter(itertools.chain.from_iterable(part), dtype=np.int64, count=int(lengths.sum())), 0, last)
                nonempty = np.flatnonzero(lengths)
                starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[nonempty]
                sums = np.add.reduceat(np.asarray(self._matrix[flat], dtype=np.float32), starts, axis=0)
                pooled = sums / lengths[nonempty, None]
                norms = np.linalg.norm(pooled, axis=1, keepdims=True)
                out[i + j + nonempty] = np.divide(pooled, norms, out=np.zeros_like(pooled), where=norms > 0)
        return out

    def _token_ids(self, texts: list[str]) -> list[list[int]]:
        """`encode(text, add_special_tokens=False).ids` of each text; from word pieces for a batch."""
        if len(texts) < C.WORDLLAMA_PIECE_MIN_TEXTS or not self._pieces_allowed():
            return [e.ids for e in self._tokenizer.encode_batch(texts, add_special_tokens=False)]
        pieces, model = self._pieces, self._tokenizer.model
        if len(pieces) > C.WORDLLAMA_PIECES_KEPT:
            pieces.clear()
        out = []
        for text in texts:
            if any(s in text for s in self._specials):  # the tokenizer cuts these out before normalising
                out.append(self._tokenizer.encode(text, add_special_tokens=False).ids)
                continue
            ids: list[int] = []
            for piece in PIECE_RE.findall(MARK + text.replace(" ", MARK) if text else ""):
                got = pieces.get(piece)
                if got is None:
                    got = pieces[piece] = [t.id for t in model.tokenize(piece)]
                ids.extend(got)
            out.append(ids)
        return out

    def _pieces_allowed(self) -> bool:
        """Does this tokenizer cut at word starts (see the module doc)? Checked once, on first use."""
        if self._piecewise is None:
            spec = json.loads(self._tokenizer.to_str())
            norm, model = spec.get("normalizer"), spec.get("model") or {}
            plain = norm == {
                "type": "Sequence",
                "normalizers": [{"type": "Prepend", "prepend": MARK}, {"type": "Replace", "pattern": {"String": " "}, "content": MARK}],
            }
            merges = [m.split(" ") if isinstance(m, str) else m for m in model.get("merges", [])]
            local = not any(b.startswith(MARK) and a.strip(MARK) for a, b in merges)
            self._piecewise = plain and local and spec.get("pre_tokenizer") is None and model.get("type") == "BPE" and not model.get("dropout")
            self._specials = [t["content"] for t in spec.get("added_tokens", [])]
        return self._piecewise

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
    root.handlers[:] = handlers
    root.setLevel(level)

    return WordLlama.load(config=CONFIG, dim=DIM, cache_dir=Path(wordllama.__file__).parent, disable_download=True)
