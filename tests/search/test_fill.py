"""The background fill (memtool/search/fill.py): a fresh clone (no memory/.cache) answers its first
search from words without embedding anything (with many kept transcripts, from its entries, logs
and Markdown files, the transcripts' words left to the fill), the transcripts are indexed and the
missing vectors filled a batch per transaction (an interrupted fill keeps what it committed),
entries' versioned embedding files are reused, and one background fill runs at a time."""

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from filelock import FileLock

from memtool import constants as C
from memtool.app import open_memory
from memtool.cache import cache_path, discard
from memtool.chunking import chunk_lines
from memtool.memory import Session
from memtool.scaffold import init
from memtool.search.engine import Query
from memtool.search.fill import fill_vectors
from memtool.search.read import transcript_sizes
from memtool.store import Layout
from tests.conftest import RecordingEmbedder

WORDS = "billing postgres kafka consumer redis cache deploy grafana alert terraform oauth token webhook stripe invoice".split()
PEOPLE = "Alice Bob Carol Dana".split()


def session(rng: random.Random, lines: int = 30) -> str:
    return "\n".join(
        f"{rng.choice(PEOPLE)}: we moved the {' '.join(rng.sample(WORDS, 3))} job {rng.randint(1, 999)} because it was slow." for _ in range(lines)
    )


def build(root, embedder, n: int, lines: int = 30) -> list:
    init(root)
    rng = random.Random(n)
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    mem = open_memory(root, embedder=embedder)
    return mem.compress_many([Session(text=session(rng, lines), when=start + timedelta(hours=7 * i), session=f"s{i}") for i in range(n)]).entries


def ranked(mem, text):
    return [(h.id, h.kind, round(h.score, 4)) for h in mem.search(Query(text=text, limit=8))]


def store_rows(root, sql):
    conn = sqlite3.connect(cache_path(Layout(root)))
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def meta(root) -> dict:
    return dict(store_rows(root, "SELECT key, value FROM meta"))


QUERIES = ("billing postgres", "kafka consumer lag", "stripe webhook invoice", "grafana alert Dana")


@pytest.mark.parametrize("deferred", [False, True], ids=["transcripts-indexed-at-once", "transcripts-left-to-the-fill"])
def test_a_fresh_clone_answers_from_words_at_once_and_the_fill_gives_the_same_ranking(root, monkeypatch, deferred):
    built = RecordingEmbedder()
    entries = build(root, built, 12)
    complete = {q: ranked(open_memory(root, embedder=built), q) for q in QUERIES}  # vectors made at compress
    discard(open_memory(root).layout)  # a fresh clone: no memory/.cache

    clone = RecordingEmbedder()
    if deferred:  # more kept transcripts than a search indexes itself, background work allowed (a fill runs: none is started)
        monkeypatch.setattr(C, "WORDS_INLINE_MAX", 4)
        monkeypatch.setenv("MEMTOOL_BACKGROUND_EMBED", "true")
        Layout(root).cache_dir.mkdir(exist_ok=True)
        running = FileLock(str(Layout(root).cache_dir / C.FILL_LOCK))
        running.acquire()
    mem = open_memory(root, embedder=clone)
    found = mem.search("billing postgres")
    assert found.hits and clone.texts == []  # answered from words: nothing embedded before it
    if deferred:
        running.release()
        assert {h.kind for h in found.hits} == {"entry"} and not store_rows(root, "SELECT id FROM docs WHERE kind = 'transcript'")
        assert meta(root)["words_missing"] == "12"
        assert any("word matches are partial: the kept transcripts of 12 entries are not indexed yet" in w for w in found.warnings)
        assert any("being indexed and embedded in the background" in w for w in found.warnings)
    else:
        assert any("semantic ranking is partial: 0 of" in w and "`memory reindex` embeds the rest" in w for w in found.warnings)
        missing, total = int(meta(root)["vectors_missing"]), int(meta(root)["vectors_total"])
        assert missing == total > C.EMBED_INLINE_MAX

    report = fill_vectors(mem.layout, clone, batch=5)
    total = int(meta(root)["vectors_total"])
    assert (report.indexed, report.left, report.errors) == (12 if deferred else 0, 0, [])
    assert report.filled == total - (12 if deferred else 0)  # with its entries' vectors read by the search (at most EMBED_INLINE_MAX)
    assert meta(root)["vectors_missing"] == "0" and meta(root).get("words_missing", "0") == "0"
    again = open_memory(root, embedder=RecordingEmbedder())
    assert not [w for w in again.search("billing postgres").warnings if "semantic" in w]
    assert {q: ranked(again, q) for q in QUERIES} == complete  # the ranking of a store whose vectors were never missing
    assert len(entries) == 12


def passages_files(root) -> dict[str, bytes]:
    return {de.name: open(de.path, "rb").read() for de in Layout(root).passages_files()}


def drop_passages_files(root) -> None:
    """What a store made before passages files were versioned holds: its clone embeds every passage."""
    shutil.rmtree(Layout(root).passages_dir)


@pytest.mark.parametrize("versioned", [True, False], ids=["passages-files", "no-passages-files"])
def test_a_clone_reads_vectors_from_the_versioned_files_and_embeds_only_what_they_lack(root, versioned):
    entries = build(root, RecordingEmbedder(), 10)
    written = passages_files(root)
    assert len(written) == len(entries)  # a short session's passages all have a vector at compress: its file is written then
    if not versioned:
        drop_passages_files(root)
    discard(open_memory(root).layout)
    clone = RecordingEmbedder()
    mem = open_memory(root, embedder=clone)
    mem.view()
    report = fill_vectors(mem.layout, clone, batch=8)
    passages = {c.text for e in entries for c in chunk_lines(mem.layout.transcript_file(e.id).read_text())}
    # each passage embedded once without the files, none with them; no entry embedded (their files were read)
    assert sorted(clone.texts) == ([] if versioned else sorted(passages))
    assert (report.left, report.passage_files) == (0, 0 if versioned else len(entries))
    assert passages_files(root) == written  # written again, byte for byte, by the clone that had to embed
    rows = store_rows(root, "SELECT d.kind, d.ref, v.vec FROM docs d JOIN docvecs v ON v.id = d.id")
    assert len(rows) == int(meta(root)["vectors_total"])
    built = RecordingEmbedder()
    for kind, ref, blob in rows:
        vec = np.frombuffer(blob, dtype="<f2").astype(np.float32)
        if kind == "entry":
            expected = mem.store.vector_for(mem.store.get(ref), clone.model, clone.dim)
        else:
            entry_id, line = ref.split("#L")
            text = next(c.text for c in chunk_lines(mem.layout.transcript_file(entry_id).read_text()) if c.line == int(line))
            expected = built.embed_documents([text])[0]
        assert np.allclose(vec, expected, atol=1e-3)


def test_a_passages_file_of_another_model_or_damaged_is_not_read(root):
    entries = build(root, RecordingEmbedder(), 4)
    lay = Layout(root)
    first, second, third, _ = (lay.passages_file(e.id) for e in entries)
    other = open_memory(root, embedder=RecordingEmbedder(model="other-hash-64"))
    other.store.write_passages([(entries[0].id, ["k"], np.ones((1, 64), np.float32))], "other-hash-64")
    second.write_bytes(second.read_bytes()[:-5])  # cut short
    third.write_bytes(b"memtool-passages 1 {not json\n")
    discard(lay)
    clone = RecordingEmbedder()
    mem = open_memory(root, embedder=clone)
    mem.view()
    report = fill_vectors(mem.layout, clone, every_file=True)
    embedded = {c.text for e in entries[:3] for c in chunk_lines(lay.transcript_file(e.id).read_text())}
    assert set(clone.texts) == embedded and report.left == 0  # the fourth entry's passages were read from its file
    assert report.passage_files == 3  # the three written anew, of this model
    assert {p.name for p in (first, second, third)} <= set(passages_files(root))
    assert b'"model": "fake-hash-64"' in first.read_bytes()


def test_a_fill_picks_up_after_an_embedder_failure(root):
    build(root, RecordingEmbedder(), 10)
    drop_passages_files(root)
    discard(open_memory(root).layout)
    failing = RecordingEmbedder(fail_after=2)
    mem = open_memory(root, embedder=failing)
    mem.view()
    first = fill_vectors(mem.layout, failing, batch=8)
    assert first.filled > 0 and first.left > 0 and "search finds them by their words" in first.errors[0]
    assert int(meta(root)["vectors_missing"]) == first.left
    kept = {t for t in failing.texts}
    rest = RecordingEmbedder()
    second = fill_vectors(mem.layout, rest)
    assert (second.filled, second.left) == (first.left, 0)
    assert kept.isdisjoint(rest.texts)  # what the first fill committed is not embedded again


@pytest.fixture
def wordllama_clone(root, model_cache, env):
    """A store of 160 sessions with kept transcripts, its vectors WordLlama's, cloned without
    memory/.cache and without its passages files (its passages are embedded again); and the
    environment for `memory` subprocesses on it."""
    build(root, "wordllama", 160, lines=40)
    drop_passages_files(root)
    discard(open_memory(root, embedder="wordllama").layout)
    return root, env


def test_an_interrupted_fill_keeps_its_committed_batches(wordllama_clone):
    root, env = wordllama_clone
    path = cache_path(Layout(root))
    filler = subprocess.Popen(
        [sys.executable, "-m", "memtool", "reindex", "--vectors", "--batch", "32"], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and filler.poll() is None:
            try:
                if store_rows(root, "SELECT count(*) FROM docvecs")[0][0] >= 160 + 3 * 32:  # the entries' vectors from files, 3 batches
                    break
            except sqlite3.OperationalError:
                pass  # no store yet: the fill's refresh is building it

            time.sleep(0.005)
        conn = sqlite3.connect(path, timeout=60)
        conn.execute("BEGIN IMMEDIATE")  # the filler's next commit waits here, and is killed waiting
        committed = conn.execute("SELECT count(*) FROM docvecs").fetchone()[0]
        total = conn.execute("SELECT count(*) FROM docs").fetchone()[0]
        assert filler.poll() is None and 160 + 3 * 32 <= committed < total, "the fill ended before it could be interrupted"
        time.sleep(0.3)
        filler.send_signal(signal.SIGKILL)
        filler.wait()
        conn.execute("ROLLBACK")
        conn.close()
    finally:
        if filler.poll() is None:
            filler.kill()
            filler.wait()
    assert store_rows(root, "PRAGMA integrity_check") == [("ok",)]
    assert store_rows(root, "SELECT count(*) FROM docvecs")[0][0] == committed  # every committed batch kept
    mismatched = store_rows(root, "SELECT count(*) FROM docs d JOIN docvecs dv ON dv.id = d.id JOIN vectors v ON v.key = d.vkey WHERE v.vec != dv.vec")
    assert mismatched == [(0,)]
    search = subprocess.run([sys.executable, "-m", "memtool", "search", "billing postgres"], cwd=root, env=env, capture_output=True, text=True)
    assert search.returncode == 0 and "semantic ranking is partial" in search.stderr
    again = subprocess.run([sys.executable, "-m", "memtool", "reindex", "--vectors"], cwd=root, env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    # it went on from there, and wrote every passages file (the killed fill wrote none)
    assert again.stdout.strip() == f"{total - committed} documents embedded, 0 without a vector, 160 passages files written"


def test_one_background_fill_at_a_time_and_a_search_never_waits_for_it(wordllama_clone):
    root, env = wordllama_clone
    env = {**env, "MEMTOOL_BACKGROUND_EMBED": "true"}
    layout = Layout(root)
    layout.cache_dir.mkdir(exist_ok=True)
    lock = FileLock(str(layout.cache_dir / C.FILL_LOCK))
    lock.acquire()  # as a running fill holds it
    try:
        held = subprocess.run([sys.executable, "-m", "memtool", "search", "billing postgres"], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    finally:
        lock.release()
    assert held.returncode == 0 and "being embedded in the background" in held.stderr
    assert not (layout.cache_dir / C.FILL_LOG).exists()  # no fill was started beside the running one

    searches = [subprocess.Popen([sys.executable, "-m", "memtool", "search", q], cwd=root, env=env, stderr=subprocess.PIPE, text=True) for q in QUERIES[:2]]
    answers = [(s.wait(timeout=120), s.stderr.read()) for s in searches]
    assert [code for code, _ in answers] == [0, 0], answers
    assert any("semantic ranking is partial" in said for _, said in answers)  # the later may find the fill done already
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and meta(root).get("vectors_missing") != "0":
        time.sleep(0.1)
    assert meta(root)["vectors_missing"] == "0"
    while time.monotonic() < deadline and " left" not in (layout.cache_dir / C.FILL_LOG).read_text():
        time.sleep(0.1)
    log = (layout.cache_dir / C.FILL_LOG).read_text()
    assert log.count("filling the search cache's missing vectors") == 1, log
    assert ", 0 left" in log
    done = subprocess.run([sys.executable, "-m", "memtool", "search", "billing postgres"], cwd=root, env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "semantic ranking is partial" not in done.stderr


def test_reindex_fills_every_vector_with_the_sync(root):
    build(root, RecordingEmbedder(), 10)
    discard(open_memory(root).layout)
    from memtool.sync import sync

    rec = RecordingEmbedder()
    report = sync(open_memory(root, embedder=rec))
    assert report.filled == int(meta(root)["vectors_total"]) and meta(root)["vectors_missing"] == "0"
    assert "search vectors filled" in report.line()
    assert os.path.exists(cache_path(Layout(root)))


@pytest.fixture
def many_transcripts(root, model_cache, env):
    """A store of more sessions with kept transcripts than a search indexes itself
    (WORDS_INLINE_MAX), its vectors WordLlama's, cloned without memory/.cache; a copy of it built
    in one go by `memory reindex`; and the environment for `memory` subprocesses."""
    build(root, "wordllama", C.WORDS_INLINE_MAX + 44, lines=8)
    discard(open_memory(root, embedder="wordllama").layout)
    one_go = root.parent / "one-go"
    shutil.copytree(root, one_go)
    done = subprocess.run([sys.executable, "-m", "memtool", "--root", str(one_go), "reindex"], cwd=one_go, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return root, one_go, env


def search_json(root, env, query: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "memtool", "--root", str(root), "search", query, "--json"], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_background_job_indexes_a_fresh_clones_transcripts_and_the_ranking_is_a_one_go_builds(many_transcripts):
    root, one_go, env = many_transcripts
    env = {**env, "MEMTOOL_BACKGROUND_EMBED": "true"}
    kept = C.WORDS_INLINE_MAX + 44
    first = search_json(root, env, "billing postgres")
    assert first.returncode == 0, first.stderr
    assert f"word matches are partial: the kept transcripts of {kept} entries are not indexed yet" in first.stderr
    assert {h["kind"] for h in json.loads(first.stdout)} == {"entry"}  # from the entries: no transcript read before the answer
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (meta(root).get("words_missing") != "0" or meta(root).get("vectors_missing") != "0"):
        time.sleep(0.1)
    assert meta(root)["words_missing"] == "0" and meta(root)["vectors_missing"] == "0"
    while time.monotonic() < deadline and " left" not in (Layout(root).cache_dir / C.FILL_LOG).read_text():
        time.sleep(0.1)
    assert f"{kept} transcripts indexed" in (Layout(root).cache_dir / C.FILL_LOG).read_text()
    passages = store_rows(root, "SELECT count(*) FROM docs WHERE kind = 'transcript'")[0][0]
    assert passages == store_rows(one_go, "SELECT count(*) FROM docs WHERE kind = 'transcript'")[0][0] > kept
    for q in QUERIES:  # answers, scores and passages those of the store `memory reindex` built in one go
        filled, whole = search_json(root, env, q), search_json(one_go, env, q)
        assert filled.returncode == whole.returncode == 0 and filled.stderr == whole.stderr == ""
        assert json.loads(filled.stdout) == json.loads(whole.stdout)


def test_a_killed_words_fill_keeps_its_committed_batches(many_transcripts):
    root, one_go, env = many_transcripts
    kept = C.WORDS_INLINE_MAX + 44
    Layout(root).cache_dir.mkdir(exist_ok=True)
    with FileLock(str(Layout(root).cache_dir / C.FILL_LOCK)):  # as a running fill holds it: the search starts none
        first = search_json(root, {**env, "MEMTOOL_BACKGROUND_EMBED": "true"}, "billing postgres")
    assert first.returncode == 0 and meta(root)["words_missing"] == str(kept)
    filler = subprocess.Popen(
        [sys.executable, "-m", "memtool", "reindex", "--vectors", "--batch", "4"], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:  # killed a few batches in, wherever it is (its transactions follow each other: no waiting writer could get between them)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and filler.poll() is None and int(meta(root)["words_missing"]) > kept - 3 * 4:
            time.sleep(0.002)
        running = filler.poll() is None
        filler.send_signal(signal.SIGKILL)
        filler.wait()
    finally:
        if filler.poll() is None:
            filler.kill()
            filler.wait()
    left = int(meta(root)["words_missing"])
    assert running and 0 < left <= kept - 3 * 4, "the fill ended before it could be interrupted"
    assert store_rows(root, "PRAGMA integrity_check") == [("ok",)]
    deferred = {e for (e,) in store_rows(root, "SELECT id FROM entries WHERE transcript = 'deferred'")}
    assert len(deferred) == left  # the count committed with the batches
    passages = "SELECT entry, count(*) FROM docs WHERE kind = 'transcript' GROUP BY entry"
    whole = {e: n for e, n in store_rows(one_go, passages) if e not in deferred}
    assert dict(store_rows(root, passages)) == whole and len(whole) == kept - left  # every committed batch whole, nothing of the cut one
    search = search_json(root, env, "billing postgres")  # answers from what is committed, says what is left, indexes none of it
    assert search.returncode == 0 and f"the kept transcripts of {left} entries are not indexed yet" in search.stderr
    assert "`memory reindex` indexes and embeds them" in search.stderr and meta(root)["words_missing"] == str(left)
    again = subprocess.run([sys.executable, "-m", "memtool", "reindex", "--vectors"], cwd=root, env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(f"{left} kept transcripts indexed, ") and again.stdout.strip().endswith(", 0 without a vector")  # it went on from there
    assert meta(root)["words_missing"] == "0"


def test_reindex_indexes_the_transcripts_a_search_left_to_the_fill(root, monkeypatch):
    build(root, RecordingEmbedder(), 10)
    discard(open_memory(root).layout)
    monkeypatch.setattr(C, "WORDS_INLINE_MAX", 4)
    monkeypatch.setenv("MEMTOOL_BACKGROUND_EMBED", "true")
    Layout(root).cache_dir.mkdir(exist_ok=True)
    with FileLock(str(Layout(root).cache_dir / C.FILL_LOCK)):  # as a running fill holds it: the searches start none
        open_memory(root, embedder=RecordingEmbedder()).search("billing postgres")
        assert meta(root)["words_missing"] == "10"
        again = open_memory(root, embedder=RecordingEmbedder()).search("billing postgres")  # a later search does not index them itself
    assert meta(root)["words_missing"] == "10" and any("kept transcripts of 10 entries are not indexed yet" in w for w in again.warnings)
    sizes = {de.name[:-3]: de.stat().st_size for de in Layout(root).transcript_files()}
    assert transcript_sizes(Layout(root)) == sizes  # for `memory dedupe`: those not indexed yet are stat-ed
    from memtool.sync import sync

    sync(open_memory(root, embedder=RecordingEmbedder()))
    assert meta(root)["words_missing"] == "0" and meta(root)["vectors_missing"] == "0"
    assert store_rows(root, "SELECT count(*) FROM entries WHERE transcript = 'deferred'") == [(0,)]
    assert store_rows(root, "SELECT count(DISTINCT entry) FROM docs WHERE kind = 'transcript'") == [(10,)]


def test_a_writer_waiting_on_the_words_fill_gets_in_between_its_batches(root, monkeypatch):
    """The background words fill pauses between transactions: a compress or a sync that comes
    meanwhile waits for one batch, not for the whole fill (with no pause this fails: the writer's
    busy-wait never finds the lock free)."""
    import threading

    from memtool.cache import connect
    from memtool.search.fill import fill_words

    embedder = RecordingEmbedder()
    build(root, embedder, 40, lines=8)
    discard(open_memory(root).layout)
    monkeypatch.setattr(C, "WORDS_INLINE_MAX", 4)
    monkeypatch.setenv("MEMTOOL_BACKGROUND_EMBED", "true")
    Layout(root).cache_dir.mkdir(exist_ok=True)
    with FileLock(str(Layout(root).cache_dir / C.FILL_LOCK)):  # no background job: this test runs the fill
        open_memory(root, embedder=embedder).search("billing postgres")
    assert meta(root)["words_missing"] == "40"
    fill = threading.Thread(target=fill_words, args=(Layout(root), embedder, 4, C.WORDS_FILL_PAUSE_S))  # as the background job runs it
    fill.start()
    try:
        deadline = time.monotonic() + 60
        while int(meta(root)["words_missing"]) == 40 and time.monotonic() < deadline:
            time.sleep(0.001)
        writer = connect(cache_path(Layout(root)), timeout=30)
        writer.execute("BEGIN IMMEDIATE")  # as a change set begins
        left_then = int(dict(writer.execute("SELECT key, value FROM meta").fetchall())["words_missing"])
        writer.execute("ROLLBACK")
        writer.close()
    finally:
        fill.join()
    assert left_then > 0  # it got the lock before the fill's last batch
    assert meta(root)["words_missing"] == "0"


def test_index_json_is_written_while_the_words_fill_has_entries_left(root, monkeypatch):
    """A fresh clone's first search leaves its entries to the words fill: index.json, which holds its
    own lines, is written meanwhile, the bytes of the first clone's."""
    from memtool.index_json import write_index

    build(root, RecordingEmbedder(), 12)
    layout = Layout(root)
    written = layout.index_file.read_bytes()
    discard(layout)  # a fresh clone: no memory/.cache, no index.json (git-ignored)
    layout.index_file.unlink()
    monkeypatch.setattr(C, "WORDS_INLINE_MAX", 4)
    monkeypatch.setenv("MEMTOOL_BACKGROUND_EMBED", "true")
    layout.cache_dir.mkdir(exist_ok=True)
    running = FileLock(str(layout.cache_dir / C.FILL_LOCK))  # a fill runs: none is started
    running.acquire()
    mem = open_memory(root, embedder=RecordingEmbedder())
    assert mem.search("billing postgres").hits
    running.release()
    assert store_rows(root, "SELECT count(*) FROM entries WHERE transcript = 'deferred'") == [(12,)]
    assert write_index(layout, mem.settings.compressor).why == "missing"
    assert layout.index_file.read_bytes() == written
