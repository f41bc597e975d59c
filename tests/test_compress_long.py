"""A long session compresses at a cost that does not grow with its passages' embedding: the entry and
its words are stored at once, its vector averaging ENTRY_VECTOR_PASSAGES passages spread over the
session; the transcript's other passages get their vectors from the background fill, which the
compress starts, and a search meanwhile says how many documents have none yet."""

import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timezone

import numpy as np

from memtool import constants as C
from memtool.app import open_memory
from memtool.cache import cache_path
from memtool.chunking import chunk_lines
from memtool.scaffold import init
from memtool.search.engine import Query
from memtool.search.fill import fill_vectors
from memtool.session_vectors import chunk_key
from memtool.store import Layout
from tests.conftest import FakeCompressor, FakeEmbedder, RecordingEmbedder, embedding_path, read_vector_at

WHEN = datetime(2026, 2, 1, 10, tzinfo=timezone.utc)


def long_session(turns: int = 400) -> str:
    return "\n".join(
        f"{'User' if i % 2 == 0 else 'Assistant'}: turn {i} keeps the retry queue at {i % 13} workers; the billing export {i * 7} ran slow again."
        for i in range(turns)
    )


def store_meta(root) -> dict:
    conn = sqlite3.connect(cache_path(Layout(root)))
    try:
        return dict(conn.execute("SELECT key, value FROM meta").fetchall())
    finally:
        conn.close()


def test_a_long_session_embeds_only_the_passages_its_entry_vector_averages_and_the_fill_the_rest(root):
    init(root)
    emb = RecordingEmbedder()
    mem = open_memory(root, embedder=emb, compressor=FakeCompressor())
    text = long_session()
    chunks = [c.text for c in chunk_lines(text)]
    n = C.ENTRY_VECTOR_PASSAGES
    assert len(chunks) > n + C.EMBED_INLINE_MAX  # more than a compress embeds, inline or for the entry
    e = mem.compress(text, when=WHEN)

    sample = [chunks[i * len(chunks) // n] for i in range(n)]
    assert emb.texts == sample  # the passages spread over the session, first to last quarter; nothing else
    mean = FakeEmbedder().embed_documents(sample).mean(axis=0)
    stored = np.array(read_vector_at(embedding_path(root, e.id))["embedding"], dtype=np.float32)
    assert np.allclose(stored, mean / np.linalg.norm(mean), atol=1e-3)  # float16 on disk
    missing = len(set(chunks)) - len(set(sample))
    assert store_meta(root)["vectors_missing"] == str(missing)

    found = mem.search(Query(text="billing export", kinds=("transcript",)))  # by their words before they have vectors
    assert found.hits
    total = int(store_meta(root)["vectors_total"])
    assert any(f"{total - missing:,} of {total:,} documents have vectors" in w for w in found.warnings), found.warnings

    report = fill_vectors(mem.layout, emb)
    assert report.left == 0 and report.filled == missing
    assert sorted(emb.texts) == sorted({*sample, *chunks})  # every passage embedded once
    mem.invalidate()
    done = mem.search("billing export")
    assert not any("semantic ranking is partial" in w for w in done.warnings), done.warnings


def test_a_short_sessions_passages_all_have_vectors_when_the_compress_ends(root):
    init(root)
    emb = RecordingEmbedder()
    mem = open_memory(root, embedder=emb, compressor=FakeCompressor())
    text = long_session(turns=80)
    chunks = [c.text for c in chunk_lines(text)]
    assert C.ENTRY_VECTOR_PASSAGES < len(chunks) <= C.ENTRY_VECTOR_PASSAGES + C.EMBED_INLINE_MAX
    mem.compress(text, when=WHEN)
    assert store_meta(root)["vectors_missing"] == "0" and sorted(emb.texts) == sorted(chunks)
    assert not any("semantic ranking is partial" in w for w in mem.search("billing export").warnings)


def test_memory_compress_starts_the_background_fill_which_gives_every_passage_its_vector(root, model_cache, env):
    init(root)
    session = root / "long.md"
    session.write_text(long_session(), encoding="utf-8")
    env = {**env, "MEMTOOL_BACKGROUND_EMBED": "true"}
    done = subprocess.run(
        [sys.executable, "-m", "memtool", "compress", str(session), "--date", "2026-02-01"], cwd=root, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    layout = Layout(root)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not ((log := layout.cache_dir / C.FILL_LOG).is_file() and " left" in log.read_text()):
        time.sleep(0.1)
    assert ", 0 left" in (layout.cache_dir / C.FILL_LOG).read_text()
    assert store_meta(root)["vectors_missing"] == "0"
    conn = sqlite3.connect(cache_path(layout))
    try:
        keys = {chunk_key(c.text) for c in chunk_lines(long_session())}
        held = {k for (k,) in conn.execute("SELECT key FROM vectors WHERE model = ?", (store_meta(root)["model"],))}
    finally:
        conn.close()
    assert keys <= held
