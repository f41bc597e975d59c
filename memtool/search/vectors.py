"""Document vectors for the search cache: reused across builds (chunks by text hash, entries by id
and content hash), so that only text nothing holds a vector for is embedded."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np

from memtool import confine
from memtool.errors import ProviderError, UnsafePath
from memtool.fsutil import atomic_write_bytes, atomic_write_text
from memtool.models import Entry
from memtool.search.docs import Doc
from memtool.session_vectors import chunk_key, entry_vectors, kept_sessions
from memtool.store import Layout, Store

ENTRY_BATCH = 64  # entries whose vectors are computed together (each with its transcript's passages)

VECTOR_KEYS_FILE = "vector-keys.json"  # inside a delta segment: the ChunkVectorCache key of each row of its vectors.npy


class ChunkVectorCache:
    """Document vectors reused across rebuilds: chunks by text hash, entries by id and content hash.

    Stored as a memory-mapped matrix plus its list of keys; vectors added since are held in memory
    until `save`, and the delta segments' vectors (which no delta saves here) are read from their own
    memory-mapped matrices (`adopt`)."""

    def __init__(self, folder: Path, model: str, dim: int):
        self.base = folder / f"vectors-{model}"
        self.model = model
        self.dim = dim
        self.added: dict[str, np.ndarray] = {}
        self.held: list[tuple[dict[str, int], np.ndarray]] = []  # (key -> row, matrix): this cache's, then adopted deltas'
        keys, vecs = self.base.with_suffix(".keys.json"), self.base.with_suffix(".npy")
        if keys.is_file() and vecs.is_file() and not vecs.is_symlink():
            try:
                rows = {k: i for i, k in enumerate(json.loads(confine.read_bytes(keys)))}
                matrix = np.load(vecs, mmap_mode="r")
            except (ValueError, UnsafePath):
                return  # unreadable cache: start again, it is only a cache
            if matrix.shape == (len(rows), dim):
                self.held.append((rows, matrix))

    def fill(self, keys: list[str], out: np.ndarray) -> list[int]:
        """out[i] = the vector held for keys[i]; returns the positions of the keys not held. The
        memory-mapped rows of each matrix are read in one gather; a zero row (a delta built while the
        embedder failed) holds no vector."""
        wanted: list[int] = []
        for i, key in enumerate(keys):
            vec = self.added.get(key)
            if vec is not None:
                out[i] = vec
            else:
                wanted.append(i)
        for rows, matrix in self.held:
            found = [(i, row) for i in wanted if (row := rows.get(keys[i])) is not None]
            if not found:
                continue
            at = [i for i, _ in found]
            out[at] = matrix[[row for _, row in found]]
            got = {i for i, ok in zip(at, out[at].any(axis=1)) if ok}
            wanted = [i for i in wanted if i not in got]
        return wanted

    def lookup(self, keys: list[str]) -> dict[str, np.ndarray]:
        """The vectors held for some of `keys`, by key."""
        out = np.zeros((len(keys), self.dim), dtype=np.float32)
        missing = set(self.fill(keys, out))
        return {k: out[i] for i, k in enumerate(keys) if i not in missing}

    def put(self, key: str, vec: np.ndarray) -> None:
        self.added[key] = vec

    def adopt(self, delta: Path) -> None:
        """Use the vectors a delta segment holds: a delta does not save the cache, so without this the
        build replacing it would embed its documents again (with a model such as e5, seconds per
        session). They are read only for the keys asked for."""
        try:
            if json.loads(confine.read_bytes(delta / "manifest.json")).get("model") != self.model:
                return
            keys = json.loads(confine.read_bytes(delta / VECTOR_KEYS_FILE))
            if (delta / "vectors.npy").is_symlink():
                return
            vecs = np.load(delta / "vectors.npy", mmap_mode="r")
        except (OSError, ValueError, UnsafePath):
            return  # no delta, or one cut off: its documents are embedded again
        if vecs.shape == (len(keys), self.dim):
            self.held.append(({k: i for i, k in enumerate(keys)}, vecs))

    def save(self, keep: set[str]) -> None:
        keys = sorted(k for k in keep if k in self.added or any(k in rows for rows, _ in self.held))
        vecs = np.zeros((len(keys), self.dim), np.float32)
        missing = set(self.fill(keys, vecs))  # only zero rows: no vector
        if missing:
            held = [i for i in range(len(keys)) if i not in missing]
            keys, vecs = [keys[i] for i in held], vecs[held]
        buf = io.BytesIO()
        np.save(buf, vecs.astype(np.float32))
        atomic_write_bytes(self.base.with_suffix(".npy.tmpsave"), buf.getvalue())
        os.replace(self.base.with_suffix(".npy.tmpsave"), self.base.with_suffix(".npy"))
        atomic_write_text(self.base.with_suffix(".keys.json"), json.dumps(keys))


def entry_vector_key(e: Entry) -> str:
    """How an entry's vector is keyed in ChunkVectorCache: its id and content hash."""
    return f"entry:{e.id}:{e.content_hash()}"


def vector_keys(docs: list[Doc], by_id: dict[str, Entry]) -> list[str]:
    """Each document's key in ChunkVectorCache: an entry's id and content hash, a chunk's text hash."""
    return [entry_vector_key(by_id[d.ref]) if d.kind == "entry" else chunk_key(d.index_text) for d in docs]


def embed_docs(layout: Layout, embedder, docs: list[Doc], entries: list[Entry], cache: ChunkVectorCache, errors: list[str], progress=None,
             save: bool = True, fresh: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """A vector per document: entries from `fresh` (vectors the caller just computed), the cache or
    their embedding files, the rest from the cache or embedded now. Only what nothing holds is embedded.
    If the embedder fails (a remote one unreachable), the rest keep a zero vector, said in `errors`:
    words still find them, and a later build (the next change, `memory reindex --full`) embeds them."""
    store = Store(layout)
    dim = embedder.dim
    by_id = {e.id: e for e in entries}
    keys = vector_keys(docs, by_id)
    for key, vec in (fresh or {}).items():
        cache.put(key, vec)
    vectors = np.zeros((len(docs), dim), dtype=np.float32)
    missing: list[int] = []
    for i in cache.fill(keys, vectors):
        d = docs[i]
        vec = store.vector_for(by_id[d.ref], embedder.model, dim) if d.kind == "entry" else None  # first build, or the entry changed
        if vec is None:
            missing.append(i)
        else:
            vectors[i] = vec
            cache.put(keys[i], vec)
    step = 512
    try:
        # entries first: their vectors average their kept transcripts' passages, which the chunks then reuse
        entries_todo = [i for i in missing if docs[i].kind == "entry"]
        for s in range(0, len(entries_todo), ENTRY_BATCH):
            idx = entries_todo[s : s + ENTRY_BATCH]
            todo = [by_id[docs[i].ref] for i in idx]
            vecs, passages = entry_vectors(embedder, todo, kept_sessions(layout, todo), known=cache.lookup)
            for key, v in passages.items():
                cache.put(key, v)
            for i, v in zip(idx, vecs):
                vectors[i] = v
                cache.put(keys[i], v)
            if progress:
                progress(len(idx))
        chunks = [i for i in missing if docs[i].kind != "entry"]
        held = cache.lookup([keys[i] for i in chunks])
        for i in chunks:
            if keys[i] in held:
                vectors[i] = held[keys[i]]
        missing = [i for i in chunks if keys[i] not in held]
        for s in range(0, len(missing), step):
            idx = missing[s : s + step]
            vecs = embedder.embed_documents([docs[i].index_text for i in idx])
            for i, v in zip(idx, vecs):
                vectors[i] = v
                cache.put(keys[i], v)
            if progress:
                progress(len(idx))
    except ProviderError as exc:  # no retry per batch: a service that is down would cost a timeout each
        left = int((~vectors.any(axis=1)).sum())
        errors.append(f"{left} documents have no vector yet ({exc}); search finds them by their words")
    if save:
        cache.save(set(keys))
    return vectors
