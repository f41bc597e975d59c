"""An entry's vector stands for its whole session, not only for the words its summary kept.

An entry keeps about a tenth of its session's tokens, so a question about something said once
("when did Melanie go to the museum?") often shares no word with it. Its vector is therefore the
mean of its session's passage vectors (the chunks the search cache indexes for a kept transcript),
normalised; of a long session, the mean of ENTRY_VECTOR_PASSAGES of them spread evenly over it, so
that a compress embeds a bounded number of passages whatever the session's length (the others are
embedded by the background fill, memtool/search/fill.py). Computed when the session is compressed,
it stays in the entry's embedding file when the transcript is not kept. The passage vectors computed
on the way are handed to the search cache, so a kept transcript is embedded once.

A compress embeds those passages on a worker thread (`Prefetch`) while the compressor reads the
session: they depend on the session's text alone, and the embedder's engine (C, or a remote call)
runs without Python's lock, so on two cores the wall time is the longer of the two, not their sum.

An entry with no session text to hand (written by hand, or re-embedded after its transcript was not
kept) embeds its own fields (`Entry.embed_text`), as every entry did before.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterable, Mapping

import numpy as np

from memtool import confine
from memtool import constants as C
from memtool.chunking import chunk_lines
from memtool.errors import ProviderError, StoreCorrupt
from memtool.models import Entry
from memtool.store import Layout, read_passages


def chunk_key(text: str) -> str:
    """How a passage's vector is keyed in the cache (memtool/cache.py): its text's hash."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


Lookup = Callable[[list[str]], dict[str, np.ndarray]]  # chunk keys -> the vectors already held for some of them


def kept_sessions(layout: Layout, entries: Iterable[Entry]) -> dict[str, str]:
    """Entry id -> its kept transcript, for the entries that have one (read as the search cache reads it)."""
    texts = {e.id: confine.read_optional_text(layout.transcript_file(e.id), C.MAX_DOC_BYTES, []) for e in entries}
    return {i: t for i, t in texts.items() if t is not None}  # none, or one the search cache skips too (a link, a FIFO, too large)


def stored_passages(layout: Layout, entry_ids: Iterable[str], model: str, dim: int) -> dict[str, np.ndarray]:
    """Chunk key -> vector of the passages these entries' passages files hold for `model` (made by a
    fill here or on another machine; memtool/store.py). A file of another model, or one that cannot
    be read, gives none (`memory doctor` reports a damaged one, and the next fill writes it anew)."""
    out: dict[str, np.ndarray] = {}
    for entry_id in entry_ids:
        try:
            held = read_passages(layout.passages_file(entry_id))
        except (StoreCorrupt, OSError):
            continue
        if held and held["model"] == model and held["dim"] == dim:
            out.update(zip(held["keys"], held["vectors"]))
    return out


def sampled(chunks: list[str]) -> list[str]:
    """The passages an entry's vector averages: all of them, or ENTRY_VECTOR_PASSAGES spread evenly from the first."""
    n, most = len(chunks), C.ENTRY_VECTOR_PASSAGES
    return chunks if n <= most else [chunks[i * n // most] for i in range(most)]


def entry_vectors(embedder, entries: list[Entry], sessions: Mapping[str, str], known: Lookup | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """One unit vector per entry: the normalised mean of its session's passage vectors (`sampled`),
    or its embed_text's vector when `sessions` holds no text for it. Passages `known` already has a
    vector for are not embedded again. Returns the vectors and the passage vectors computed here
    (chunk key -> vector), for the search cache. One embedder call for the whole batch; a
    ProviderError propagates."""
    parts: list[list[str]] = []  # per entry: the keys of what its vector averages
    texts: dict[str, str] = {}  # key -> text, each distinct text once
    for e in entries:
        chunks = sampled([c.text for c in chunk_lines(sessions.get(e.id) or "")])
        keys = [chunk_key(t) for t in chunks] or [f"text:{e.id}"]  # no session text: the entry's own fields
        texts.update(zip(keys, chunks or [e.embed_text()]))
        parts.append(keys)
    held = known([k for k in texts if not k.startswith("text:")]) if known else {}
    todo = [k for k in texts if k not in held]
    vecs = embedder.embed_documents([texts[k] for k in todo]) if todo else np.zeros((0, embedder.dim), np.float32)
    computed = dict(zip(todo, np.asarray(vecs, dtype=np.float32)))
    out = np.zeros((len(entries), embedder.dim), dtype=np.float32)
    for i, keys in enumerate(parts):
        mean = np.mean([held[k] if k in held else computed[k] for k in keys], axis=0)
        norm = float(np.linalg.norm(mean))
        out[i] = mean / norm if norm else mean
    return out, {k: v for k, v in computed.items() if not k.startswith("text:")}


class Prefetch:
    """The passages each session's entry vector averages (`sampled`), embedded on one worker thread
    from the moment the session's text is known: `submit` returns at once, `collect` waits for them
    all. Between a `collect` and the next `submit` the worker is idle, so the caller's own embedder
    calls (entry_vectors, a change set) never run beside it. Use as a context manager."""

    def __init__(self, embedder):
        self._embedder = embedder
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memtool-embed")
        self._jobs: list[Future] = []

    def __enter__(self) -> "Prefetch":
        return self

    def __exit__(self, *exc) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, session: str) -> None:
        self._jobs.append(self._pool.submit(self._embed, session))

    def _embed(self, session: str) -> dict[str, np.ndarray]:
        chunks = sampled([c.text for c in chunk_lines(session)])
        if not chunks:
            return {}
        embed = getattr(self._embedder, "embed_documents_aside", self._embedder.embed_documents)  # e5: one thread, the compressor has the other core
        return dict(zip(map(chunk_key, chunks), np.asarray(embed(chunks), dtype=np.float32)))

    def collect(self) -> dict[str, np.ndarray]:
        """Chunk key -> vector of every passage submitted since the last collect. A ProviderError
        propagates, once every job has ended."""
        jobs, self._jobs = self._jobs, []
        out: dict[str, np.ndarray] = {}
        failed: ProviderError | None = None
        for job in jobs:
            try:
                out.update(job.result())
            except ProviderError as exc:
                failed = failed or exc
        if failed is not None:
            raise failed
        return out
