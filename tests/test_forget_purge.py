"""After `memory forget`, nothing of the entry is left under memory/.cache: not its summary's words,
not a word only its transcript held, not its vectors (entry and passages), in the SQLite file, its
WAL or shared-memory file, or any other derived file; and the next search or reindex does not bring
any of it back. The store's state tables (use counts, word counts, the sync manifest) are purged too."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memtool import constants as C
from memtool.app import open_memory
from memtool.cache import access_counts, cache_path, count_access
from memtool.docfreq import recent_doc_freq
from memtool.forget import forget
from memtool.scaffold import init
from memtool.sync import sync
from memtool.sync_scan import Manifest

NOW = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
SUMMARY_WORD = "Vexmoorian"  # in the first sentence: the fake compressor's summary
TRANSCRIPT_TOKEN = "qzxvortal"  # said once, deep in the transcript: only its passages hold it
FILLER = "\n".join(f"user: step {i} of the rollout checklist went fine on the staging cluster." for i in range(60))
FORGOTTEN = (
    f"Decided that the {SUMMARY_WORD} billing vault moves to the new region.\n"
    f"{FILLER}\n"
    f"assistant: the operator password for the vault console was {TRANSCRIPT_TOKEN} until today.\n"
    f"{FILLER}\n"
)


@pytest.fixture
def mem(root, fake_embedder, fake_compressor):
    init(root)
    return open_memory(root, embedder=fake_embedder, compressor=fake_compressor, access_boost=0.05)  # use counts on


def cache_bytes(root: Path) -> bytes:
    """Every file under memory/.cache, the store's -wal and -shm included."""
    return b"".join(p.read_bytes() for p in sorted((root / "memory" / C.CACHE_DIR).rglob("*")) if p.is_file())


def vectors_of(root: Path, entry_id: str) -> list[bytes]:
    """The float16 vectors the store holds for an entry and for each document of it (its passages)."""
    conn = sqlite3.connect(cache_path(open_memory(root).layout))
    try:
        entry = [v for (v,) in conn.execute("SELECT vec FROM vectors WHERE key LIKE ?", (f"entry:{entry_id}:%",))]
        docs = [v for (v,) in conn.execute("SELECT vec FROM docvecs WHERE id IN (SELECT id FROM docs WHERE entry = ?)", (entry_id,))]
        return entry + docs
    finally:
        conn.close()


def test_forget_leaves_no_text_and_no_vector_of_the_entry_in_the_cache(mem, root):
    kept = mem.compress("Alice moved the reporting tables to Postgres and wrote the migration.", when=NOW, session="kept")
    gone = mem.compress(FORGOTTEN, when=NOW + timedelta(minutes=5), session="gone")
    assert SUMMARY_WORD in gone.summary and TRANSCRIPT_TOKEN not in gone.summary.lower()
    mem.search(TRANSCRIPT_TOKEN)  # records a use of it, and builds the passages' documents
    count_access(mem.layout, [gone.id])
    sync(mem)  # the sync manifest names it
    mem.compress("Bob tuned the Kafka consumer.", when=NOW + timedelta(minutes=9), session="later")
    assert recent_doc_freq(mem.layout)[0][SUMMARY_WORD.lower()] == 1  # word counts hold its words (table day_words)
    assert gone.id in access_counts(mem.layout) and gone.id in (Manifest.load(mem.layout) or Manifest()).vectors
    vectors = vectors_of(root, gone.id)
    assert len(vectors) >= 3  # the entry's vector and its passages'
    held = cache_bytes(root)
    assert SUMMARY_WORD.lower().encode() in held.lower() and TRANSCRIPT_TOKEN.encode() in held  # the test sees what it looks for
    assert all(v in held for v in vectors)

    report = forget(mem.layout, [gone.id], mem.settings.compressor)
    assert "memory/.cache/memtool.sqlite" in report.caches

    def nothing_left() -> None:
        left = cache_bytes(root)
        assert SUMMARY_WORD.lower().encode() not in left.lower()
        assert TRANSCRIPT_TOKEN.encode() not in left
        assert not [i for i, v in enumerate(vectors) if v in left]
        assert gone.id.encode() not in left  # nor its id: no record, count or manifest entry names it
        store = cache_path(mem.layout)
        assert not Path(f"{store}-wal").exists() or Path(f"{store}-wal").stat().st_size == 0  # checkpointed and truncated

    nothing_left()
    assert gone.id not in access_counts(mem.layout) and gone.id not in (Manifest.load(mem.layout) or Manifest()).vectors
    mem.invalidate()
    assert gone.id not in [h.id for h in mem.search(f"{TRANSCRIPT_TOKEN} {SUMMARY_WORD} vault")]
    assert kept.id in [h.id for h in mem.search("reporting tables Postgres")]
    sync(mem)
    sync(mem, full=True)
    mem.compress("Carol rotated the staging keys.", when=NOW + timedelta(minutes=20), session="after")
    conn = sqlite3.connect(cache_path(mem.layout))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    nothing_left()  # nothing a later search, reindex or compress wrote brought it back
