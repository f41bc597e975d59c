"""The cache (memtool/search/build.py) follows the files one change set at a time, and what
it answers equals a store built from scratch: same documents, same BM25 (as bm25s scores them), same
supersede marks. A change set is one transaction: a failure half-way leaves the last committed state."""

import json
import shutil
import sqlite3
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timezone

import numpy as np
import pytest

from memtool import cache
from memtool.app import open_memory
from memtool.cache import cache_path, discard
from memtool.memory import Session
from memtool.scaffold import init
from memtool.search import build, read
from memtool.search.engine import Query
from memtool.search.read import CacheView
from memtool.text import tokenize
from tests.conftest import RecordingEmbedder, transcript_path


def when(day):
    return datetime(2026, 2, day, 9, tzinfo=timezone.utc)


TOPICS = ["billing Postgres index", "Kafka consumer lag", "dark mode React", "Auth0 login", "Terraform staging", "Grafana alerts"]


@pytest.fixture
def mem(root, fake_embedder):
    init(root)
    m = open_memory(root, embedder=fake_embedder)
    m.compress_many(
        [Session(text=f"Alice: we worked on the {t} today and wrote down what broke.", when=when(1 + i), session=f"s{i}") for i, t in enumerate(TOPICS)]
    )
    return m


def ranked(m, text, **kw):
    return [(h.id, h.kind, h.text) for h in m.search(Query(text=text, limit=10, **kw))]


def full_rebuild(root, fake_embedder):
    discard(open_memory(root, embedder=fake_embedder).layout)
    return open_memory(root, embedder=fake_embedder)


def generation(root):
    conn = sqlite3.connect(cache_path(open_memory(root).layout))
    try:
        return conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0]
    finally:
        conn.close()


def test_one_file_holds_the_whole_cache(mem, root):
    mem.search("Kafka")
    assert {p.name for p in (root / "memory/.cache").iterdir() if p.name.startswith("memtool")} <= {
        "memtool.sqlite",
        "memtool.sqlite-wal",
        "memtool.sqlite-shm",
    }
    assert not (root / "memory/.cache/search").exists()


def test_new_entry_is_one_change_set_and_matches_a_full_rebuild(mem, root, fake_embedder):
    before = mem.view().n
    new = mem.compress("Bob: the Kafka consumer lag came back after the Terraform change.", when=when(9), session="s9")
    got = ranked(mem, "Kafka consumer lag Terraform")
    assert mem.view().n == before + 2  # the entry and its one transcript chunk, appended; nothing rebuilt
    assert new.id in [i for i, _, _ in got[:2]]
    assert got == ranked(full_rebuild(root, fake_embedder), "Kafka consumer lag Terraform")


def test_edited_and_removed_sources_are_replaced(mem, root, fake_embedder):
    day = root / "memory/index/2026-02-02.json"
    data = json.loads(day.read_text())
    data["entries"][0]["summary"] = "Kafka consumer lag was fixed by raising max.poll.records to 500."
    day.write_text(json.dumps(data, indent=2))
    (root / "memory/index/2026-02-04.json").unlink()  # the Auth0 entry leaves (e.g. git pull)
    mem.invalidate()
    got = ranked(mem, "Kafka max.poll.records Auth0 login", kinds=("entry",))
    texts = [t for _, _, t in got]
    assert any("max.poll.records" in t for t in texts)
    assert not any("Auth0" in t for t in texts)
    assert got == ranked(full_rebuild(root, fake_embedder), "Kafka max.poll.records Auth0 login", kinds=("entry",))


def test_a_log_line_embeds_only_its_chunk(mem, root, fake_embedder):
    calls = fake_embedder.calls
    mem.log("Investigated the flaky webhook retries with Dana.")
    assert ranked(mem, "flaky webhook retries")[0][1] == "log"
    assert fake_embedder.calls - calls <= 1


def test_bm25_equals_bm25s_over_the_live_documents(mem, root, fake_embedder):
    """After change sets that leave dead documents behind, BM25 is what bm25s (the library the
    ranking settings were tuned with) gives over the live documents alone."""
    import bm25s

    from memtool.text import terms, words

    mem.compress("Bob: the Kafka consumer lag came back, lag lag lag.", when=when(9), session="s9")
    day = root / "memory/index/2026-02-03.json"
    data = json.loads(day.read_text())
    data["entries"][0]["summary"] = "Dark mode React toggle: the consumer of the theme context re-renders twice."
    day.write_text(json.dumps(data, indent=2))
    mem.invalidate()
    index = mem.view()
    live = np.flatnonzero(index.alive)
    assert live.size < index.n  # dead documents are there, and must not count
    from memtool.search.docs import collect_docs

    docs, _ = collect_docs(mem.layout, [])
    by_ref = {d.ref: d for d in docs}
    corpus = [terms(words(by_ref[d["ref"]].index_text)) or [""] for d in index.docs(live)]
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    for query in ["Kafka consumer lag", "billing Postgres index index", "Terraform staging Grafana alerts", "nothing matches zzz"]:
        qt = [t for t in tokenize(query) if index.doc_freq(t)]
        expected = retriever.get_scores(qt) if qt else np.zeros(live.size)
        assert np.allclose(index.bm25_scores(qt)[live], expected, rtol=1e-5, atol=1e-6)
        for t in qt:
            assert index.doc_freq(t) == int((retriever.get_scores([t]) > 0).sum())


def test_many_dead_documents_rebuild_the_store_keeping_vectors(mem, root, monkeypatch):
    emb = RecordingEmbedder()
    m = open_memory(root, embedder=emb)
    m.search("Kafka")
    monkeypatch.setattr(build, "COMPACT_MIN_DEAD", 1)
    monkeypatch.setattr(build, "COMPACT_DEAD_SHARE", 0.0)
    for i in range(3):
        day = root / "memory/index/2026-02-02.json"
        data = json.loads(day.read_text())
        data["entries"][0]["keywords"] = [f"edit{i}"]
        day.write_text(json.dumps(data, indent=2))
        m.invalidate()
        assert ranked(m, f"edit{i}")
    index = m.view()
    assert int((~index.alive).sum()) <= 2  # rebuilt before the last change set: only its own dead documents left
    assert len(emb.texts) == len(set(emb.texts))  # and no text embedded twice


def marks(m, text):
    return {h.id: h.superseded_by for h in m.search(Query(text=text, limit=10, kinds=("entry",)))}


def test_an_entry_superseding_one_of_another_day_marks_it(mem, root, fake_embedder):
    old = next(e for e in mem.store.iter_entries() if "Kafka" in e.summary)
    new = mem.compress("Bob: the Kafka consumer lag is fixed; we raised the partitions.", when=when(9), session="s9", supersedes=[old.id])
    got = marks(mem, "Kafka consumer lag")
    assert got[old.id] == new.id and got[new.id] == ""
    assert mem.context("Kafka consumer lag").included.count(old.id) == 0
    assert got == marks(full_rebuild(root, fake_embedder), "Kafka consumer lag")


def test_removing_the_superseding_entry_clears_the_mark(mem, root, fake_embedder):
    old = next(e for e in mem.store.iter_entries() if "Kafka" in e.summary)
    new = mem.compress("Bob: the Kafka consumer lag is fixed; we raised the partitions.", when=when(9), session="s9", supersedes=[old.id])
    mem = full_rebuild(root, fake_embedder)
    assert marks(mem, "Kafka consumer lag")[old.id] == new.id
    (root / "memory/index" / f"{new.day}.json").unlink()  # the newer entry leaves (a git checkout)
    mem.invalidate()
    got = marks(mem, "Kafka consumer lag")
    assert new.id not in got and got[old.id] == ""
    assert got == marks(full_rebuild(root, fake_embedder), "Kafka consumer lag")


def test_an_edited_superseded_entry_keeps_its_mark(mem, root, fake_embedder):
    old = next(e for e in mem.store.iter_entries() if "Kafka" in e.summary)
    new = mem.compress("Bob: the Kafka consumer lag is fixed; we raised the partitions.", when=when(9), session="s9", supersedes=[old.id])
    day = root / "memory/index" / f"{old.day}.json"
    data = json.loads(day.read_text())
    data["entries"][0]["summary"] = "Kafka consumer lag: first attempt, more consumers."
    day.write_text(json.dumps(data, indent=2))
    mem.invalidate()
    assert marks(mem, "Kafka consumer lag")[old.id] == new.id


def test_compress_brings_the_store_up_to_date(root):
    """The transcript's chunks are embedded when the session is stored, not by the next search."""
    init(root)
    emb = RecordingEmbedder()
    m = open_memory(root, embedder=emb)
    m.compress("Alice: the billing Postgres index is rebuilt nightly by a cron job on db-2.", when=when(1), session="a")
    m.compress("Bob: the Kafka consumer lag alarm now pages the on-call after ten minutes.", when=when(2), session="b")
    assert any("Kafka consumer lag alarm" in t for t in emb.texts)
    embedded = len(emb.texts)
    fresh = open_memory(root, embedder=emb)  # a new process, as the next session's search
    assert ranked(fresh, "Kafka consumer lag")[0][1] in ("entry", "transcript")
    assert len(emb.texts) == embedded


def test_an_open_view_keeps_its_snapshot_inside_a_search(mem, root, fake_embedder):
    """A reader holds one committed state while it reads; the next read transaction sees newer ones."""
    mem.compress("Bob: the Kafka consumer lag came back after the Terraform change.", when=when(9), session="s9")
    view = CacheView(cache_path(mem.layout))
    with view.reading():
        n = view.n
        other = open_memory(root, embedder=fake_embedder)
        other.compress("Carol: Grafana alerts for the billing Postgres index now page the on-call.", when=when(10), session="s10")
        assert view.docs(np.flatnonzero(view.alive)) and view.n == n
        grafana = int((view.bm25_scores(["grafana"]) > 0).sum())  # the fixture's one Grafana session only
        assert grafana == view.doc_freq("grafana")
    with view.reading():
        assert view.n > n and int((view.bm25_scores(["grafana"]) > 0).sum()) > grafana


def test_a_transcript_edited_in_place_is_seen_by_a_sync(mem, root, fake_embedder):
    from memtool.sync import sync

    a = mem.compress("Bob: the Kafka consumer lag came back after the Terraform change.", when=when(9), session="s9")
    for word in ("Quokkadb", "Marimbel"):
        with open(transcript_path(root, a.id), "a", encoding="utf-8") as fh:
            fh.write(f"Later we moved the whole thing to {word}.\n")
        assert sync(open_memory(root, embedder=fake_embedder)).search_rebuilt
        assert ranked(open_memory(root, embedder=fake_embedder), word)[0][0] == a.id
    query = "Quokkadb Marimbel Kafka Grafana"
    assert ranked(open_memory(root, embedder=fake_embedder), query) == ranked(full_rebuild(root, fake_embedder), query)


def test_the_sync_after_a_compress_changes_nothing(mem, root, fake_embedder):
    from memtool.sync import sync

    mem.compress("Bob: the Kafka consumer lag came back after the Terraform change.", when=when(9), session="s9")
    sync(open_memory(root, embedder=fake_embedder))
    before = generation(root)
    assert not sync(open_memory(root, embedder=fake_embedder)).search_rebuilt
    assert generation(root) == before


@contextmanager
def write_lock_held(path, seconds: float):
    """Another process holding the store's write lock (memtool's own connect, BEGIN IMMEDIATE) for
    `seconds`, then letting go; yields that process."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from memtool.cache import connect; c = connect(Path(sys.argv[1])); "
            "c.execute('BEGIN IMMEDIATE'); print('held', flush=True); time.sleep(float(sys.argv[2])); c.execute('ROLLBACK')",
            str(path),
            str(seconds),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def test_a_search_does_not_wait_for_another_process_writing(root, fake_embedder):
    """Another process (a detached session-end compress) holds the store's write lock: a search
    answers from the last committed state, says so, and the next one sees the change."""
    init(root)
    m = open_memory(root, embedder=fake_embedder)
    m.compress("Alice: the billing Postgres index is rebuilt nightly by a cron job on db-2.", when=when(1), session="a")
    m.log("Quokkadb replaced the old Helm chart for the staging cluster.", when=when(2))
    with write_lock_held(cache_path(m.layout), 120) as holder:
        busy = m.search(Query(text="Quokkadb Helm chart", limit=10))
        assert busy.hits == []  # the store as it was: the log is not in it yet
        assert holder.poll() is None
        assert any("being updated by another memtool process" in w for w in busy.warnings)
    free = m.search(Query(text="Quokkadb Helm chart", limit=10))
    assert free.hits and free.hits[0].kind == "log" and not free.warnings


def test_a_search_with_no_store_yet_waits_for_the_one_being_built(root, fake_embedder):
    """A fresh clone: two searches start together. The one that finds the other building the store
    has nothing to answer from yet, so it waits for that build instead of failing."""
    init(root)
    m = open_memory(root, embedder=fake_embedder)
    m.compress("Alice: the billing Postgres index is rebuilt nightly by a cron job on db-2.", when=when(1), session="a")
    discard(m.layout)
    with write_lock_held(cache_path(m.layout), 1.5):
        held = time.monotonic()
        found = open_memory(root, embedder=fake_embedder).search(Query(text="billing Postgres index", limit=5))
        assert time.monotonic() - held > 1.0  # it waited for the holder's 1.5 s
    assert found.hits and "billing Postgres index" in found.hits[0].text


READER = """
import sys
from pathlib import Path
from memtool.search.read import CacheView
for _ in range(int(sys.argv[2])):
    index = CacheView(Path(sys.argv[1]))
    with index.reading():
        index.postings("billing")
    index.close()
"""


def test_many_processes_opening_and_closing_the_store_at_once_all_read_it(mem, root):
    """Readers never fail on the brief exclusive lock SQLite takes when a process's last connection
    closes (its checkpoint): two searches starting together both answer (with no wait at all for
    it, about a quarter of these opens failed with "database is locked")."""
    path = cache_path(mem.layout)
    readers = [subprocess.Popen([sys.executable, "-c", READER, str(path), "150"], stderr=subprocess.PIPE, text=True) for _ in range(4)]
    failed = [err for r in readers if r.wait(timeout=120) != 0 for err in [r.stderr.read()]]
    assert failed == []


def test_a_failed_change_set_leaves_the_last_committed_state(mem, root, fake_embedder, monkeypatch):
    query = "Kafka consumer lag"
    before = ranked(mem, query)
    gen = generation(root)
    mem.log("Kafka consumer lag dashboards moved to Grafana.")

    def boom(*a, **kw):
        raise KeyboardInterrupt  # a kill half-way through the change set

    monkeypatch.setattr(build, "_insert_docs", boom)
    with pytest.raises(KeyboardInterrupt):
        mem.search(query)
    assert generation(root) == gen
    monkeypatch.undo()
    assert ranked(SearchIndexMemory(root, fake_embedder), query) == before  # read as committed, without refreshing
    assert ranked(mem, query) != before  # and the next search applies the change set


def SearchIndexMemory(root, fake_embedder):
    """A Memory whose view is the cache as committed (no refresh)."""
    m = open_memory(root, embedder=fake_embedder)
    m._view = CacheView(cache_path(m.layout))
    return m


def test_a_moved_store_keeps_its_cache(mem, root, fake_embedder):
    mem.compress("Bob: the Kafka consumer lag came back after the Terraform change.", when=when(9), session="s9")
    query = "Kafka consumer lag Grafana Postgres"
    got = ranked(mem, query)
    gen = generation(root)
    moved = root.parent / "renamed"
    shutil.move(root, moved)
    m = open_memory(moved, embedder=fake_embedder)
    assert ranked(m, query) == got
    assert generation(moved) == gen  # nothing re-read


def store_rows(root) -> dict[str, list]:
    conn = sqlite3.connect(cache_path(open_memory(root).layout))
    try:
        return {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY {'1' if table == 'words' else 'rowid'}").fetchall()  # words: WITHOUT ROWID
            for table in ("docs", "postings", "columns", "docvecs", "words", "groups", "entries", "sources")
        }
    finally:
        conn.close()


def per_term(postings: list[tuple[str, bytes, bytes]]) -> dict[str, tuple[bytes, bytes]]:
    """Each term's blocks (in row order) joined."""
    out: dict[str, tuple[bytes, bytes]] = {}
    for term, docs, tfs in postings:
        d, t = out.get(term, (b"", b""))
        out[term] = (d + docs, t + tfs)
    return out


def test_a_build_in_batches_stores_what_one_batch_does(mem, root, fake_embedder, monkeypatch):
    """A rebuild reads, embeds and inserts BUILD_BATCH source files at a time (its memory follows a
    batch, not the store): one source a batch, the store is row for row the one a single batch
    builds, a supersede whose newer entry comes in a later batch included."""
    old = next(e for e in mem.store.iter_entries() if "Kafka" in e.summary)
    new = mem.compress("Bob: the Kafka consumer lag is fixed; we raised the partitions.", when=when(9), session="s9", supersedes=[old.id])
    mem.log("Investigated the flaky webhook retries with Dana.")
    full_rebuild(root, fake_embedder).view()
    whole = store_rows(root)
    monkeypatch.setattr(build, "BUILD_BATCH", 1)
    batched = full_rebuild(root, fake_embedder)
    assert marks(batched, "Kafka consumer lag")[old.id] == new.id
    assert store_rows(root) == whole
    monkeypatch.setattr(build, "POSTINGS_HELD", 1)  # each batch's postings written as further blocks of their terms
    blocks = full_rebuild(root, fake_embedder)
    assert marks(blocks, "Kafka consumer lag") == marks(batched, "Kafka consumer lag")
    rows = store_rows(root)
    assert {k: v for k, v in rows.items() if k != "postings"} == {k: v for k, v in whole.items() if k != "postings"}
    assert len(rows["postings"]) > len(whole["postings"]) and per_term(rows["postings"]) == per_term(whole["postings"])
    for entry in (old, new):  # a change set of two sources, read in two batches: the older one's mark is kept
        day = root / "memory/index" / f"{entry.day}.json"
        day.write_text(day.read_text() + "\n")
    blocks.invalidate()
    assert marks(blocks, "Kafka consumer lag")[old.id] == new.id


def test_dense_scores_read_in_chunks_equal_the_whole_matrix(mem, root, fake_embedder, monkeypatch):
    """The vector fallback scores the vectors a few rows at a time: the scores are those of every
    vector in one float32 matrix, to the bit, and a document without a vector scores 0."""
    index = mem.view()
    with sqlite3.connect(index.path) as conn:
        conn.execute("DELETE FROM docvecs WHERE id = (SELECT min(id) FROM docvecs)")
    index = open_memory(root, embedder=fake_embedder).view()
    conn = sqlite3.connect(index.path)
    rows = conn.execute("SELECT id, vec FROM docvecs").fetchall()
    conn.close()
    matrix = np.zeros((index.n, index.dim), dtype=np.float32)
    matrix[[i for i, _ in rows]] = np.frombuffer(b"".join(v for _, v in rows), dtype="<f2").reshape(len(rows), -1)
    qvec = fake_embedder.embed_query("Kafka consumer lag")
    monkeypatch.setattr(read, "DENSE_CHUNK_ROWS", 3)
    with index.reading():
        chunked = index.dense_scores(qvec)
    assert index.n > 3 * 2 and len(rows) == index.n - 1
    assert np.array_equal(chunked, matrix @ qvec.astype(np.float32))
    assert (chunked == 0).sum() == 1 and (chunked != 0).sum() == index.n - 1
    with index.reading():  # again, from the vectors the first call kept (they fit DENSE_HELD_BYTES)
        assert index._dense is not None and np.array_equal(index.dense_scores(qvec), chunked)
    monkeypatch.setattr(read, "DENSE_HELD_BYTES", 0)
    bounded = open_memory(root, embedder=fake_embedder).view()
    with bounded.reading():  # too many to keep: read in chunks each time, the same scores
        assert np.array_equal(bounded.dense_scores(qvec), chunked) and bounded._dense is None


def test_a_cache_of_another_state_version_gets_its_state_tables_anew(mem, root):
    """The state is derived: a cache whose state tables are of another STATE_VERSION has them made
    again, empty (counts and word counts are worked out afresh), and the search tables kept."""
    mem.search("Kafka")
    path = cache_path(mem.layout)
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT OR REPLACE INTO access VALUES ('ctx-kept', 7)")
        conn.execute(f"PRAGMA user_version = {cache.STATE_VERSION - 1}")
        docs = conn.execute("SELECT count(*) FROM docs").fetchone()
    cache.connect(path).close()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == cache.STATE_VERSION
        assert conn.execute("SELECT count(*) FROM access").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM docs").fetchone() == docs != (0,)
    finally:
        conn.close()
