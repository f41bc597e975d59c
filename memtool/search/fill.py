"""The background fill: what a search left undone so as to answer at once (docs/search.md, "A fresh
clone"), done a batch per transaction so a search never waits for it and an interrupted fill keeps
every batch it committed: first the words of kept transcripts a fresh clone's first search left
out (entries marked DEFERRED, memtool/search/build.py), in the order a one-go build reads them, so
the finished store ranks as one built in one go; then the vectors of documents that have none,
entries' from their versioned embedding files where those are of this model and content, the rest
embedded FILL_BATCH at a time, outside any transaction. It runs in `memory reindex`, or detached
(`memory reindex --vectors --background`, started by a search; memory/.cache/embed.lock held for
its life, FILL_START_GRACE_S between starts).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import uuid
from contextlib import closing, suppress
from dataclasses import dataclass, field
from itertools import groupby
from typing import Callable, Iterable, Iterator

import numpy as np

from memtool import constants as C
from memtool.cache import WRITE_WAIT_S, cache_path, connect, read_meta
from memtool.dayfile import read_day
from memtool.errors import DimensionMismatch, ProviderError, StorageError, StoreCorrupt
from memtool.fsutil import locked
from memtool.models import Entry
from memtool.search.build import entry_vector_key, reread_deferred
from memtool.search.read import DEFERRED, CacheView, held_vectors, vector_gap
from memtool.session_vectors import entry_vectors, kept_sessions, stored_passages
from memtool.store import Layout, LiveAndArchive, Store

Progress = Callable[[int, int], None]  # (documents filled so far, documents that had no vector)


@dataclass
class FillReport:
    filled: int = 0  # documents given a vector
    left: int = 0  # documents still without one
    errors: list[str] = field(default_factory=list)
    indexed: int = 0  # entries whose kept transcripts' passages the words fill indexed
    passage_files: int = 0  # passages files written (memtool/store.py), for a clone to read


def fill_words(layout: Layout, embedder, batch: int = C.WORDS_FILL_BATCH, pause: float = 0.0) -> FillReport:
    """Index the passages of the kept transcripts a search left to this fill (store.DEFERRED),
    about `batch` entries per transaction: an interrupted fill keeps every batch it committed.
    `pause` seconds between transactions let a waiting writer (a compress, a sync) take the lock."""
    report = FillReport()
    path = cache_path(layout)
    while path.is_file():
        with closing(connect(path, timeout=WRITE_WAIT_S)) as conn:
            conn.execute("BEGIN IMMEDIATE")
            with conn:
                done, left = reread_deferred(conn, layout, embedder, batch, report.errors)
        report.indexed += done
        if not done or not left:
            break
        time.sleep(pause)
    return report


def fill_vectors(
    layout: Layout,
    embedder,
    progress: Progress | None = None,
    batch: int = C.FILL_BATCH,
    from_end: bool = False,
    words_batch: int = C.WORDS_FILL_BATCH,
    pause: float = 0.0,
    every_file: bool = False,
) -> FillReport:
    """Give the store's documents that have no vector one: first the entries whose versioned
    embedding file holds a current vector of this model (read, not embedded), then the rest embedded
    `batch` at a time; each batch committed on its own. `from_end`: newest documents first (a
    foreground fill running beside a background one, which starts from the oldest: the two meet
    instead of doing the same work). Stops at the first embedder failure (said in `errors`: what is
    left waits for the next fill). Then the passages files of the entries whose passages it embedded
    (`every_file`: of every live entry with a kept transcript) are written, for a clone to read."""
    report = fill_words(layout, embedder, words_batch, pause)  # the words first: they answer more than vectors do
    path = cache_path(layout)
    if not path.is_file() or embedder.reason is not None:  # no store yet, or an embedder this machine cannot run
        return report
    with closing(connect(path, timeout=WRITE_WAIT_S)) as conn:
        if read_meta(conn).get("model") != embedder.model:
            return report  # built for another model: the next refresh rebuilds it
        total = report.left = vector_gap(conn)[0]
        embedded: set[str] = set()  # entries some of whose passages were embedded here
        for files_only, size in ((True, C.FILL_FILES_BATCH), (False, batch)):
            for rows in _missing(conn, size, from_end, files_only):
                try:
                    vectors = _vectors(conn, layout, embedder, rows, embed=not files_only)
                except ProviderError as exc:
                    report.errors.append(f"{report.left} documents have no vector yet ({exc}); search finds them by their words")
                    report.left = _settle(conn)
                    _write_files(layout, conn, embedder.model, None if every_file else embedded, report)
                    return report
                done = _commit(conn, embedder.model, vectors)
                if done is None:
                    return report  # the store was rebuilt for another model meanwhile
                embedded.update(r[6] for r in rows if r[1] == "transcript" and not files_only)
                report.filled += done
                report.left = max(report.left - done, 0)
                if progress:
                    progress(report.filled, total)
        report.left = _settle(conn)
        _write_files(layout, conn, embedder.model, None if every_file else embedded, report)
    return report


def _write_files(layout: Layout, conn: sqlite3.Connection, model: str, entry_ids: set[str] | None, report: FillReport) -> None:
    try:
        report.passage_files = write_passage_files(layout, conn, model, entry_ids)
    except StorageError as exc:  # the store's lock held long, a full disk: the next fill writes them
        report.errors.append(f"passages files not written ({exc}); the next fill writes them")


def write_passage_files(layout: Layout, conn: sqlite3.Connection, model: str, entry_ids: Iterable[str] | None = None) -> int:
    """Write the passages file of each of these live entries (None: of every live entry with a kept
    transcript) whose passages all have a vector of `model` in the cache, PASSAGES_WRITE_BATCH
    entries per batch, under the store's lock (a forget meanwhile leaves no file behind). Returns
    the files written (one already holding the same bytes is left alone)."""
    if entry_ids is None:
        ids = [i for (i,) in conn.execute("SELECT id FROM entries WHERE archived = 0 AND transcript NOT IN ('-', ?) ORDER BY id", (DEFERRED,))]
    else:
        ids = sorted(entry_ids)
    store, written = Store(layout), 0
    for start in range(0, len(ids), C.PASSAGES_WRITE_BATCH):
        part = json.dumps(ids[start : start + C.PASSAGES_WRITE_BATCH])
        with store.lock():
            rows = conn.execute(
                "SELECT d.entry, d.vkey, v.vec FROM docs d JOIN entries e ON e.id = d.entry AND e.archived = 0 "
                "LEFT JOIN vectors v ON v.model = ? AND v.key = d.vkey "
                "WHERE d.kind = 'transcript' AND d.entry IN (SELECT value FROM json_each(?)) ORDER BY d.entry, d.id",
                (model, part),
            ).fetchall()
            items = []
            for entry_id, group in groupby(rows, key=lambda r: r[0]):
                passages = list(group)
                if all(vec is not None for _, _, vec in passages):
                    vectors = np.frombuffer(b"".join(vec for _, _, vec in passages), dtype="<f2").reshape(len(passages), -1)
                    items.append((entry_id, [key for _, key, _ in passages], vectors))
            written += len(store.write_passages(items, model))
    return written


def _missing(conn: sqlite3.Connection, size: int, from_end: bool, files_only: bool) -> Iterator[list[tuple]]:
    """Batches of (id, kind, ref, source, text, vkey, entry) of documents without a vector, in id order (or
    from the newest), read again after each batch: a change set meanwhile is seen."""
    order, cmp = ("DESC", "<") if from_end else ("ASC", ">")
    kind = "AND kind IN ('entry', 'transcript')" if files_only else ""
    cursor = 2**63 - 1 if from_end else -1  # past every id
    columns = "id, kind, ref, source, text, vkey, entry"
    query = f"SELECT {columns} FROM docs WHERE id NOT IN (SELECT id FROM docvecs) {kind} AND id {cmp} ? ORDER BY id {order} LIMIT ?"
    while rows := conn.execute(query, (cursor, size)).fetchall():
        cursor = rows[-1][0]
        yield rows


def _entries(layout: Layout, rows: list[tuple]) -> Iterator[tuple[Layout, list[Entry]]]:
    """The entries of these entry documents, as their day files hold them now (one whose content
    changed since is left to the next change set), with the layout their files are under."""
    for source in dict.fromkeys(r[3] for r in rows if r[1] == "entry"):
        wanted = {r[2]: r[5] for r in rows if r[1] == "entry" and r[3] == source}
        try:
            entries = [e for e in read_day(layout.root / source) if e.id in wanted and entry_vector_key(e) == wanted[e.id]]
        except (OSError, StoreCorrupt, UnicodeDecodeError):
            continue  # changed or damaged since: the next change set reads it again
        archived = (layout.root / source).parent.parent.parent == layout.archive_dir  # memory/archive/YYYY/index/
        if entries:
            yield (LiveAndArchive(layout.root) if archived else layout), entries


def _passage_homes(layout: Layout, rows: list[tuple]) -> Iterator[tuple[Layout, list[str]]]:
    """The entries of these passage documents, with the layout their files are under."""
    archived = {r[6] for r in rows if r[3].startswith(f"{C.MEMORY_DIR}/{C.ARCHIVE_DIR}/")}
    live = list(dict.fromkeys(r[6] for r in rows if r[6] not in archived))
    yield from ((lay, ids) for lay, ids in ((layout, live), (LiveAndArchive(layout.root), sorted(archived))) if ids)


def _vectors(conn: sqlite3.Connection, layout: Layout, embedder, rows: list[tuple], embed: bool) -> dict[str, np.ndarray]:
    """Vectors (by key) for these documents: the store's own, entries' from their versioned embedding
    files (made here or on another machine) where the file is of this model and this content,
    passages' from their entry's passages file where it is of this model; with
    `embed`, the rest embedded: entries as a compress makes them (the mean of their kept transcript's
    passages, or their fields), passages and Markdown chunks from their text."""
    out = held_vectors(conn, embedder.model, [r[5] for r in rows])  # another fill, or a change set, got there first
    for lay, ids in _passage_homes(layout, [r for r in rows if r[1] == "transcript" and r[5] not in out]):
        stored = stored_passages(lay, ids, embedder.model, embedder.dim)
        out.update((r[5], stored[r[5]]) for r in rows if r[5] in stored)
    for lay, entries in _entries(layout, [r for r in rows if r[5] not in out]):
        store = Store(lay)
        for e in entries:
            with suppress(DimensionMismatch):  # another model's: embedded
                if (vec := store.vector_for(e, embedder.model, embedder.dim)) is not None:
                    out[entry_vector_key(e)] = vec
        todo = [e for e in entries if entry_vector_key(e) not in out]
        if embed and todo:
            vecs, passages = entry_vectors(embedder, todo, kept_sessions(lay, todo), known=lambda ks: {k: out[k] for k in ks if k in out})
            out.update(passages)
            out.update((entry_vector_key(e), v) for e, v in zip(todo, vecs))
    texts = {r[5]: r[4] for r in rows if r[1] != "entry" and r[5] not in out}
    if embed and texts:
        out.update(zip(texts, np.asarray(embedder.embed_documents(list(texts.values())), dtype=np.float32)))
    return out


def _commit(conn: sqlite3.Connection, model: str, vectors: dict[str, np.ndarray]) -> int | None:
    """One transaction: the vectors, and a `docvecs` row for each document (by now) of their keys
    that has none. Returns the documents given a vector, or None when the store is of another model now."""
    conn.execute("BEGIN IMMEDIATE")
    with conn:
        if read_meta(conn).get("model") != model:
            return None
        conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", [(model, k, v.astype("<f2").tobytes()) for k, v in vectors.items()])
        done = conn.execute(
            "INSERT OR IGNORE INTO docvecs SELECT d.id, v.vec FROM docs d JOIN vectors v ON v.model = ? AND v.key = d.vkey "
            "WHERE d.vkey IN (SELECT value FROM json_each(?)) AND d.id NOT IN (SELECT id FROM docvecs)",
            (model, json.dumps(list(vectors))),
        ).rowcount
        left = max(int(read_meta(conn).get("vectors_missing", "0")) - done, 0)
        # a new generation: an open search view reads the columns (and its vector matrix) again
        conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [("vectors_missing", str(left)), ("generation", uuid.uuid4().hex)])
    return done


def _settle(conn: sqlite3.Connection) -> int:
    """Count what is left (the running count drifts when change sets ran beside the fill), record it."""
    conn.execute("BEGIN IMMEDIATE")
    with conn:
        missing, total = vector_gap(conn)
        conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [("vectors_missing", str(missing)), ("vectors_total", str(total))])
    return missing


# -- the background fill ---------------------------------------------------------------------------
def index_gap(index: CacheView) -> tuple[int, int, int]:
    """(documents without a vector, documents, entries whose kept transcripts are not indexed yet)
    as the change sets and fills last recorded them; read inside the view's read transaction."""
    meta = index.meta_counts()
    return int(meta.get("vectors_missing", "0")), int(meta.get("vectors_total", "0")), int(meta.get("words_missing", "0"))


def _fill_lock(layout: Layout):
    """The fill lock, taken at once or not at all (filelock.Timeout)."""
    from filelock import FileLock

    return FileLock(str(layout.cache_dir / C.FILL_LOCK), timeout=0)


def filling(layout: Layout) -> bool:
    """Whether a background fill holds the fill lock now."""
    from filelock import Timeout

    try:
        with _fill_lock(layout):
            return False
    except Timeout:
        return True


def start_fill(layout: Layout) -> bool:
    """Start the background fill (a detached `memory reindex --vectors --background`) unless one runs
    or was started less than FILL_START_GRACE_S ago. Returns whether one was started."""
    marker = layout.cache_dir / C.FILL_STARTED
    try:
        with locked(layout.cache_dir / f"{C.FILL_STARTED}.lock", timeout=5):
            if filling(layout):
                return False
            try:
                if time.time() - marker.stat().st_mtime < C.FILL_START_GRACE_S:
                    return False
            except FileNotFoundError:
                pass
            marker.touch()
            cmd = [sys.executable, "-m", "memtool", "--root", str(layout.root), "reindex", "--vectors", "--background"]
            kwargs: dict = {"start_new_session": True} if os.name == "posix" else {"creationflags": getattr(subprocess, "DETACHED_PROCESS", 0)}
            with open(layout.cache_dir / C.FILL_LOG, "ab") as log:
                subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=str(layout.root), close_fds=True, **kwargs)
    except (OSError, StorageError):  # LockBusy too
        return False  # a read-only folder, a start lock held long: the search answers all the same, and says how to fill
    return True


def run_background(layout: Layout, embedder, log: Callable[[str], None]) -> FillReport | None:
    """The background fill's body: the fill lock held for its whole life (None when another holds
    it), at a lower priority than the user's own work."""
    from filelock import Timeout

    try:
        held = _fill_lock(layout).acquire()
    except Timeout:
        return None
    with held:  # released when the fill ends
        if hasattr(os, "nice"):
            os.nice(C.FILL_NICE)
        log(f"pid {os.getpid()}: filling the search cache's missing vectors ({embedder.model})")
        report = fill_vectors(layout, embedder, pause=C.WORDS_FILL_PAUSE_S)  # the user's own writes go first
        log(
            f"pid {os.getpid()}: {report.indexed} transcripts indexed, {report.filled} vectors filled, {report.left} left"
            + "".join(f"; {e}" for e in report.errors)
        )
        return report


def fill_later(layout: Layout, embedder, allowed: bool) -> bool:
    """After a change set made outside a search (a watched change): start the background fill if
    the store has documents without a vector (or transcripts not indexed) and it is `allowed`
    (setting `background_embed`)."""
    path = cache_path(layout)
    if not allowed or not path.is_file():
        return False
    with closing(connect(path)) as conn:
        meta = read_meta(conn)
    vectors = meta.get("vectors_missing", "0") != "0" and embedder.reason is None
    return (vectors or meta.get("words_missing", "0") != "0") and start_fill(layout)


def fill_note(layout: Layout, missing: int, total: int, started: bool, unindexed: int = 0) -> str:
    """What a search says while vectors are missing or kept transcripts are not indexed yet."""
    have, started = total - missing, started or filling(layout)
    share = f"semantic ranking is partial: {have:,} of {total:,} documents have vectors ({100 * have // max(total, 1)}%)"
    if not unindexed:
        busy = "the rest are being embedded in the background (`memory reindex` embeds them now, with progress)"
        return f"{share}; word matches are complete; {busy if started else '`memory reindex` embeds the rest (with progress)'}"
    words = f"word matches are partial: the kept transcripts of {unindexed:,} entries are not indexed yet (entries, logs and Markdown files are)"
    busy = "they are being indexed and embedded in the background (`memory reindex` does it now, with progress)"
    how = busy if started else "`memory reindex` indexes and embeds them (with progress)"
    return f"{words}; {share if missing else 'every indexed document has a vector'}; {how}"


__all__ = ["FillReport", "fill_vectors", "write_passage_files", "fill_words", "fill_later", "fill_note", "filling", "index_gap", "run_background", "start_fill"]
