"""The derived search cache on PostgreSQL, shared by a team's clones (setting `cache: postgresql://…`).

The same derived interface as the SQLite cache (memtool/search/build.py), so that the search engine
(memtool/search/engine.py) ranks the same documents the same way: one row per searchable document
with its columns, the BM25 postings of memtool's own analysed terms (memtool.text: its stemming,
scripts and stopwords; PostgreSQL's own text search is not used) as one row per (term, document)
with its count, the words as written (typo matching), and the vectors in pgvector (float16-rounded,
as the SQLite cache keeps them, so cosines are the same; an HNSW index over them). Files in git stay
the truth: `memory reindex` makes the cache match this clone's files, and any clone rebuilds it.

Row-level: a change set deletes the documents of the source files that changed (their postings and
vectors go with them, ON DELETE CASCADE) and inserts them again with ids after every id held, so a
live document's order is the order the SQLite cache gives it. Many clients: a change set is one
transaction holding a transaction-scoped advisory lock (two refreshes at once run one after the
other, the second planning again under the lock); a search reads one REPEATABLE READ snapshot, or,
in a view that holds all of its generation (HOLD_ALL_DOCS), only the meta that says it is current.

Which sources a clone pushes: every clone's files differ in stat from another's, so sources are
compared by SHA-256 of their bytes. A clone records its files' hashes when it first opens the
shared cache (`attach`, memory/.cache/pg-seen.json: this clone's record, not a cache of the search)
and pushes a source file whose bytes changed since it last pushed or recorded it (a write, a pull),
so a clone that has not pulled never takes back what another clone pushed. `memory reindex` pushes
every difference: the cache then matches this clone's files.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from memtool import confine
from memtool import constants as C
from memtool.cache import CACHE_VERSION
from memtool.errors import ConfigError, StorageError
from memtool.fsutil import atomic_write_text
from memtool.models import Entry
from memtool.search.build import BUILD_BATCH, embed_missing, entry_vector_key
from memtool.search.cues import doc_cues
from memtool.search.docs import Declared, Doc, collect_docs, source_key, superseded_by
from memtool.search.read import DENSE_CHUNK_ROWS, IMPORTANCE_CODE, K1, KIND_CODE, VECTOR_CACHE_ROWS, B, View
from memtool.search.typos import surface_words
from memtool.session_vectors import chunk_key
from memtool.store import Layout
from memtool.text import stem_words, terms, words

LOCK_KEY = 0x6D656D746F6F6C  # the advisory lock a change set and a migration hold ("memtool")
SEEN_FILE = "pg-seen.json"  # memory/.cache: what this clone last pushed or read of each source file
EXACT_DENSE_DOCS = 20_000  # up to this many documents a search scores every vector (as SQLite does); over it, the HNSW index's nearest
HNSW_CANDIDATES = 400  # how many nearest the HNSW index gives a search (twice the engine's channel depth: a filter may drop some)
HNSW_BUILD_MEMORY = "2GB"  # maintenance_work_mem for building the HNSW index: its graph fits in memory (1M vectors of 256 dims: about 1.6 GB)
HELD_POSTINGS_BYTES = 96 << 20  # postings a reading process keeps between searches of one generation (16M), the least recently used terms' go first
HELD_POSTING_BYTES = 6  # one held posting: its document's position (int32) and its count (uint16)
HELD_DOCS = 20_000  # documents (their fields) and entry summaries it keeps so
HOLD_ALL_DOCS = 200_000  # up to this many documents a view searched again (the MCP server) reads every vector and document once per generation
HELD_VECTOR_BYTES = 256 << 20  # past it, such a view reads every vector once when they fit this (float16: 336k documents of 256 dimensions: 172 MB)
POSTING = np.dtype([("doc", ">i8"), ("tf", ">i4")])  # one posting as the server packs it
NO_POSTINGS = (np.zeros(0, np.int32), np.zeros(0, np.uint16))
MAX_TF = 65535  # a term's count in a document is capped as the SQLite cache caps it

# The schema, one step per version: a cache of an older version is brought up step by step on
# connect (under the advisory lock, so two clients never migrate at once). Version 2 added the
# documents' kind and importance as the numbers the search filters by (read packed, COLUMNS_SQL);
# version 3 the postings' counts to their index, so a term's postings are read without the heap.
MIGRATIONS: dict[int, list[str]] = {
    1: [
        "CREATE EXTENSION IF NOT EXISTS vector",
        "CREATE TABLE IF NOT EXISTS schema_version(version integer NOT NULL)",
        "CREATE TABLE meta(key text PRIMARY KEY, value text NOT NULL)",
        "CREATE TABLE sources(key text PRIMARY KEY, sha text NOT NULL)",
        "CREATE TABLE entries(id text PRIMARY KEY, source text NOT NULL, timestamp text NOT NULL, supersedes text NOT NULL)",
        "CREATE INDEX entries_source ON entries(source)",
        "CREATE TABLE groups(id integer PRIMARY KEY, key text NOT NULL UNIQUE)",
        """CREATE TABLE docs(id bigint PRIMARY KEY, source text NOT NULL, kind text NOT NULL, ref text NOT NULL, entry text NOT NULL,
            text text NOT NULL, session text NOT NULL, ts double precision NOT NULL, importance text NOT NULL, topics text NOT NULL,
            trusted boolean NOT NULL, line integer NOT NULL, superseded_by text NOT NULL, vkey text NOT NULL,
            grp integer NOT NULL, length integer NOT NULL, pinned boolean NOT NULL, cues smallint NOT NULL)""",
        "CREATE INDEX docs_source ON docs(source)",
        "CREATE INDEX docs_entry ON docs(entry)",
        "CREATE TABLE postings(term text NOT NULL, doc bigint NOT NULL REFERENCES docs(id) ON DELETE CASCADE, tf integer NOT NULL, PRIMARY KEY(term, doc))",
        "CREATE INDEX postings_doc ON postings(doc)",
        "CREATE TABLE words(word text PRIMARY KEY)",
        "CREATE TABLE vectors(model text NOT NULL, key text NOT NULL, vec vector NOT NULL, PRIMARY KEY(model, key))",
        "CREATE TABLE docvecs(id bigint PRIMARY KEY REFERENCES docs(id) ON DELETE CASCADE, vec vector NOT NULL)",
    ],
    2: [
        "ALTER TABLE docs ADD COLUMN kind_code smallint",
        "ALTER TABLE docs ADD COLUMN importance_code smallint",
        f"UPDATE docs SET kind_code = CASE kind {' '.join(f'WHEN {k!r} THEN {v}' for k, v in KIND_CODE.items())} END",
        f"UPDATE docs SET importance_code = CASE importance {' '.join(f'WHEN {k!r} THEN {v}' for k, v in IMPORTANCE_CODE.items())} ELSE 1 END",
        "ALTER TABLE docs ALTER COLUMN kind_code SET NOT NULL",
        "ALTER TABLE docs ALTER COLUMN importance_code SET NOT NULL",
    ],
    3: [  # each posting's count in the index too: a term's postings are read from the index alone, not from a heap page each
        "ALTER TABLE postings DROP CONSTRAINT postings_pkey",
        "ALTER TABLE postings ADD PRIMARY KEY (term, doc) INCLUDE (tf)",
    ],
}
SCHEMA_VERSION = max(MIGRATIONS)
REBUILT = ("docs", "entries", "sources", "groups", "words")  # emptied by a rebuild (postings, docvecs go with docs); vectors are kept
# the per-document numbers a search filters and ranks by, packed server-side into one row (big-endian)
COLUMNS_SQL = """SELECT count(*), coalesce(string_agg(int8send(id), '' ORDER BY id), ''), coalesce(string_agg(int2send(kind_code), '' ORDER BY id), ''),
    coalesce(string_agg(int2send(importance_code), '' ORDER BY id), ''), coalesce(string_agg(boolsend(trusted), '' ORDER BY id), ''),
    coalesce(string_agg(boolsend(pinned), '' ORDER BY id), ''), coalesce(string_agg(int2send(cues), '' ORDER BY id), ''),
    coalesce(string_agg(int4send(length), '' ORDER BY id), ''), coalesce(string_agg(int4send(grp), '' ORDER BY id), ''),
    coalesce(string_agg(float8send(ts), '' ORDER BY id), '') FROM docs"""
DOC_COLUMNS = (
    *("id", "source", "kind", "ref", "entry", "text", "session", "ts", "importance", "topics", "trusted", "line", "superseded_by", "vkey"),
    *("grp", "length", "pinned", "cues", "kind_code", "importance_code"),
)
DOC_FIELDS = ("kind", "ref", "entry", "text", "session", "ts", "importance", "topics", "trusted", "line", "superseded_by")


def _psycopg():
    from memtool.extras import require

    require("postgresql", "The PostgreSQL search cache (setting `cache`)")
    import psycopg

    return psycopg


def connect(url: str):
    """A connection to the cache, its schema brought to SCHEMA_VERSION first."""
    psycopg = _psycopg()
    try:
        conn = psycopg.connect(url, connect_timeout=10, autocommit=True)  # transactions are begun explicitly
    except psycopg.OperationalError as exc:
        raise StorageError(f"the PostgreSQL search cache cannot be reached ({str(exc).strip()}); check the `cache` setting and the server") from None
    migrate(conn)
    return conn


def schema_version(conn) -> int:
    """The cache's schema version (0 before the first migration), read in a transaction of its own."""
    version = schema_version_in(conn)
    conn.commit()  # a caller's connection not in autocommit is left outside a transaction
    return version


def migrate(conn, to: int = SCHEMA_VERSION) -> int:
    """Apply the schema steps after the cache's version, up to `to`, in one transaction under the
    advisory lock (a client that migrated meanwhile leaves nothing to do). Returns the version the cache had; a newer one is refused."""
    before = schema_version(conn)
    if before > SCHEMA_VERSION:
        raise ConfigError(f"the PostgreSQL search cache has schema version {before}, newer than this memtool's ({SCHEMA_VERSION}); upgrade memtool")
    if before >= to:
        return before
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        now = schema_version_in(conn)
        for version in range(now + 1, to + 1):
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
            conn.execute("DELETE FROM schema_version")
            conn.execute("INSERT INTO schema_version VALUES (%s)", (version,))
    return before


def schema_version_in(conn) -> int:
    """schema_version inside the transaction begun."""
    if not conn.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()[0]:
        return 0
    return conn.execute("SELECT max(version) FROM schema_version").fetchone()[0] or 0


def _id_array(ids: list[int]) -> str:
    """Document ids as an array literal: one parameter type whatever their size (a list of ints is sent
    as int2[], int4[] or int8[] by its largest, so the server would plan the statement again)."""
    return "{" + ",".join(map(str, ids)) + "}"


def _vec_bytes(vec: np.ndarray) -> bytes:
    """pgvector's binary form of `vec`, rounded to float16 as the SQLite cache keeps vectors."""
    v = np.asarray(vec, dtype=np.float32).astype("<f2").astype(">f4")
    return np.array([v.size, 0], dtype=">i2").tobytes() + v.tobytes()


def _vecs_from(blob: bytes, dim: int) -> np.ndarray:
    """Vectors concatenated as pgvector_send gives them, as float16 rows (what the SQLite cache reads)."""
    rows = np.frombuffer(blob, dtype=np.dtype([("head", ">i4"), ("v", ">f4", (dim,))]))
    return rows["v"].astype(np.float16)


# -- reading ----------------------------------------------------------------------------------------
class PgView(View):
    """A read snapshot of the shared cache, shaped as store.CacheView (the engine reads either):
    the columns as arrays over the live documents in id order, postings and documents read in the
    same REPEATABLE READ transaction."""

    archive = False

    def __init__(self, conn):
        self.conn = conn
        self.stale = False
        self.generation = ""
        self._all_postings = self._all_docs = False  # (_load sets them per generation)
        self._dense: tuple[np.ndarray, np.ndarray] | None = None  # (positions, float16 vectors) of every vector (_every_vector)
        with self.reading():
            pass
        self._searches = 0

    @contextmanager
    def reading(self) -> Iterator["PgView"]:
        """One REPEATABLE READ snapshot (begun with the meta read: one round trip). What this view keeps
        between searches (postings, documents, words, vectors) is dropped when the generation changed.
        A view that holds every posting, document and vector of its generation (HOLD_ALL_DOCS) reads
        nothing else in a search: its search is the meta read alone (no transaction needed), the
        snapshot begun only when the generation changed. A server lost on the way is a StorageError
        (the caller opens a new view next time)."""
        psycopg = _psycopg()
        try:
            with self._snapshot():
                yield self
        except psycopg.OperationalError as exc:
            self.stale = True
            raise StorageError(f"the PostgreSQL search cache was lost during a read ({str(exc).strip()}); check the server") from None

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        if self._all_postings and self._all_docs and self._dense is not None:
            meta = dict(self.conn.execute("SELECT key, value FROM meta").fetchall())
            if meta.get("generation", "") == self.generation:
                self._meta = meta
                yield
                self._searches += 1
                return
        cur = self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY; SELECT key, value FROM meta")
        cur.nextset()  # the SELECT's result, after the BEGIN's
        meta = self._meta = dict(cur.fetchall())
        try:
            if meta.get("generation", "") != self.generation or not hasattr(self, "n"):
                self._load(meta)
            yield
        finally:
            self.conn.execute("COMMIT")
        self._searches += 1

    def meta_counts(self) -> dict[str, str]:
        """As CacheView.meta_counts: from the meta read when the snapshot began (no round trip)."""
        return {k: v for k, v in self._meta.items() if k in ("vectors_missing", "vectors_total", "words_missing")}

    def _load(self, meta: dict[str, str]) -> None:
        if meta and meta.get("version") != CACHE_VERSION:
            raise StorageError(f"the PostgreSQL search cache holds version {meta.get('version')!r}, expected {CACHE_VERSION}: run `memory reindex`")
        self.generation = meta.get("generation", "")
        n, ids, kind, importance, trusted, pinned, cues, length, group, ts = self.conn.execute(COLUMNS_SQL).fetchone()
        self.n = int(n)
        self.ids = np.frombuffer(ids, ">i8").astype(np.int64)  # position -> the document's id in the cache
        self.kind = np.frombuffer(kind, ">i2").astype(np.int8)
        self.importance = np.frombuffer(importance, ">i2").astype(np.int8)
        self.trusted = np.frombuffer(trusted, np.bool_).copy()
        self.pinned = np.frombuffer(pinned, np.bool_).copy()
        self.cues = np.frombuffer(cues, ">i2").astype(np.uint8)
        self.length = np.frombuffer(length, ">i4").astype(np.int32)
        self.group = np.frombuffer(group, ">i4").astype(np.int32)
        self.ts = np.frombuffer(ts, ">f8").astype(np.float64)
        self.alive = np.ones(self.n, dtype=bool)  # a deleted document's row is gone
        self.live = self.n
        self._of_kinds: dict[tuple[str, ...], np.ndarray] = {}
        self.avgdl = float(self.length.sum()) / max(self.live, 1)
        self.norm = (K1 * (1 - B) + K1 * B / (self.avgdl or 1.0) * self.length).astype(np.float32)
        self.dim = int(meta.get("dim", "0"))
        # kept between searches of this generation (a process that searches again, as the MCP server
        # does, asks the server only for what it has not read yet): each bounded
        self._searches = 0  # searches read from this generation by this view
        self._dense = None
        self._postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._all_postings = False  # _postings holds every term's (_hold_all_postings)
        self._held_bytes = 0  # of _postings, HELD_POSTING_BYTES a posting
        self._docs: dict[int, tuple] = {}  # document id -> its fields (DOC_FIELDS)
        self._all_docs = False  # _docs holds every document (_read_all_docs)
        self._vector_rows: dict[int, np.ndarray] = {}  # document id -> its float16 vector, over EXACT_DENSE_DOCS (VECTOR_CACHE_ROWS at most)
        self._summaries: dict[str, str] = {}
        self._words: list[str] | None = None

    def close(self) -> None:
        self.conn.close()

    def _positions(self, ids: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.ids, ids)

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        return self.postings_of([term])[term]

    def postings_of(self, terms: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The postings of `terms`: those held, the rest read in one round trip (a read that overflows
        HELD_POSTINGS_BYTES lets the least recently used go, never what this call returns)."""
        got = {t: self._postings.pop(t) for t in terms if t in self._postings}
        self._postings.update(got)  # (the most recently used last)
        unread = [t for t in terms if t not in got]
        if unread:
            if self._hold_all_postings():
                got.update((t, self._postings.get(t, NO_POSTINGS)) for t in unread)
            else:
                got.update(self._read_postings(unread))
        return got

    def _hold_all_postings(self) -> bool:
        """A view searched again, of up to HOLD_ALL_DOCS documents whose postings fit in HELD_POSTINGS_BYTES,
        reads every term's postings once (then a term no document has is known to have none)."""
        fits = int(self.length.sum()) * HELD_POSTING_BYTES <= HELD_POSTINGS_BYTES
        if not self._all_postings and self._searches and self.n <= HOLD_ALL_DOCS and fits:
            self._postings, self._held_bytes = {}, 0
            self._read_postings(None)
            self._all_postings = True
        return self._all_postings

    def _read_postings(self, wanted: list[str] | None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The postings of `wanted` in one round trip: each term's (document id, count) pairs packed
        server-side, read from the index alone (its key holds the count); BM25 adds each document's
        share once, so their order is not needed. (Binary COPY would spare the server the packing,
        but libpq hands it over one row per call: slower.)"""
        if wanted is None:  # every term's
            rows = self.conn.execute("SELECT term, string_agg(int8send(doc) || int4send(tf), '') FROM postings GROUP BY term")
        else:
            rows = self.conn.execute("SELECT term, string_agg(int8send(doc) || int4send(tf), '') FROM postings WHERE term = ANY(%s) GROUP BY term", (wanted,))
        got = {}
        for t, blob in rows.fetchall():
            pairs = np.frombuffer(blob, POSTING)
            got[t] = (self._positions(pairs["doc"].astype(np.int64)).astype(np.int32), pairs["tf"].astype(np.uint16))
        read = {t: got.get(t, NO_POSTINGS) for t in (got if wanted is None else wanted)}
        self._postings.update(read)
        self._held_bytes += sum(p[0].size for p in read.values()) * HELD_POSTING_BYTES
        while self._held_bytes > HELD_POSTINGS_BYTES:  # the least recently used give way (this read's too, when it alone is over)
            docs, _ = self._postings.pop(next(iter(self._postings)))
            self._held_bytes -= docs.size * HELD_POSTING_BYTES
        return read

    def surface_words(self) -> list[str]:
        if self._words is None:
            self._words = [w for (w,) in self.conn.execute("SELECT word FROM words")]
        return self._words

    def dense_scores(self, qvec: np.ndarray) -> np.ndarray:
        """Cosine of every document with the query (0 without a vector). Up to EXACT_DENSE_DOCS
        documents, exactly as the SQLite cache computes it (every float16 vector, DENSE_CHUNK_ROWS at
        a time): the same ranking. Over that, reading every vector per search would cost more than
        the search (100k documents at e5's size: 150 MB), so the HNSW index gives the HNSW_CANDIDATES
        nearest and only those get their cosine (the engine keeps a channel's best 200): approximate,
        and a filter (kinds, dates) is applied after, so fewer than 200 may pass it. A view that
        searches again holds every vector (up to HOLD_ALL_DOCS documents, or HELD_VECTOR_BYTES) and scores them all."""
        out = np.zeros(self.n, dtype=np.float32)
        if qvec.shape[0] != self.dim or not self.n:
            return out
        q = qvec.astype(np.float32)
        if not self._every_vector_read():  # (else every vector is held: scored exactly, below)
            self.conn.execute(f"SET LOCAL hnsw.ef_search = {HNSW_CANDIDATES}")
            rows = self.conn.execute(
                f"SELECT id, vector_send(vec) FROM docvecs ORDER BY vec::vector({self.dim}) <=> %s::vector({self.dim}) LIMIT %s",
                (json.dumps(q.tolist()), HNSW_CANDIDATES),
            ).fetchall()
            if rows:
                at = self._positions(np.array([r[0] for r in rows], dtype=np.int64))
                out[at] = _vecs_from(b"".join(r[1] for r in rows), self.dim).astype(np.float32) @ q
            return out
        at, vecs = self._every_vector()
        for lo in range(0, at.size, DENSE_CHUNK_ROWS):
            out[at[lo : lo + DENSE_CHUNK_ROWS]] = vecs[lo : lo + DENSE_CHUNK_ROWS].astype(np.float32) @ q
        return out

    def _every_vector_read(self) -> bool:
        """Whether a search scores from every vector (read once per generation): up to EXACT_DENSE_DOCS
        documents, or, for a view that searches again, up to HOLD_ALL_DOCS or while they fit in HELD_VECTOR_BYTES."""
        fits = self.n * self.dim * 2 <= HELD_VECTOR_BYTES
        return self.n <= EXACT_DENSE_DOCS or bool(self._searches and (self.n <= HOLD_ALL_DOCS or fits))

    def _every_vector(self) -> tuple[np.ndarray, np.ndarray]:
        """(positions, float16 vectors) of every document with a vector, in id order; read once per generation."""
        if self._dense is None:
            ids, blob = self.conn.execute(
                "SELECT coalesce(string_agg(int8send(id), '' ORDER BY id), ''), coalesce(string_agg(vector_send(vec), '' ORDER BY id), '') FROM docvecs"
            ).fetchone()
            self._dense = (self._positions(np.frombuffer(ids, ">i8")), _vecs_from(blob, self.dim))
        return self._dense

    def dense_scores_of(self, qvec: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Cosine of documents at positions `ids` with the query (0 without a vector): from every vector
        up to EXACT_DENSE_DOCS documents, else only theirs read; a view searched again (the MCP server,
        a session's searches) reads every vector once (_every_vector_read), and then no
        round trip for them (the same float16 vectors either way, so the same scores)."""
        out = np.zeros(ids.size, dtype=np.float32)
        if qvec.shape[0] != self.dim or not ids.size:
            return out
        q = qvec.astype(np.float32)
        if self._every_vector_read():
            at, vecs = self._every_vector()
            where = np.searchsorted(at, ids)
            have = (where < at.size) & (at[np.minimum(where, max(at.size - 1, 0))] == ids) if at.size else np.zeros(ids.size, bool)
            out[have] = vecs[where[have]].astype(np.float32) @ q
            return out
        wanted = self.ids[ids].tolist()
        held = self._vector_rows
        new = [i for i in wanted if i not in held]
        if new:
            if len(held) + len(new) > VECTOR_CACHE_ROWS:
                held.clear()
            ids, blob = self.conn.execute(  # packed server-side into one row: no per-row cost on either side
                "SELECT coalesce(string_agg(int8send(id), ''), ''), coalesce(string_agg(vector_send(vec), ''), '') FROM docvecs WHERE id = ANY(%s::bigint[])",
                (_id_array(new),),
            ).fetchone()
            if ids:
                held.update(zip(np.frombuffer(ids, ">i8").tolist(), _vecs_from(blob, self.dim)))
        vecs = [held.get(i) for i in wanted]  # a document without a vector is asked for again next time: it may get one
        have = np.fromiter((v is not None for v in vecs), dtype=bool, count=len(vecs))
        if have.any():
            out[have] = np.stack([v for v in vecs if v is not None]).astype(np.float32) @ q
        return out

    def docs(self, positions) -> list[dict]:
        ids = [int(self.ids[int(i)]) for i in positions]
        if self._searches and self.n <= HOLD_ALL_DOCS and not self._all_docs:  # a view that searches again reads them all, once
            self._read_all_docs()
        unread = [i for i in ids if i not in self._docs]
        if unread:
            if len(self._docs) + len(unread) > HELD_DOCS and not self._all_docs:
                self._docs = {}
            # a passage's entry summary with it (the engine shows it as the hit's text): one round trip
            # (a subquery run for passages only: a join probes the entry index for every row)
            summary = "CASE WHEN d.kind = 'transcript' THEN (SELECT e.text FROM docs e WHERE e.entry = d.entry AND e.kind = 'entry' LIMIT 1) END"
            sql = f"SELECT d.id, {', '.join('d.' + f for f in DOC_FIELDS)}, {summary} FROM docs d WHERE d.id = ANY(%s::bigint[])"
            for r in self.conn.execute(sql, (_id_array(unread),)):
                self._docs[r[0]] = r[1:-1]
                if r[-1] is not None:
                    self._summaries[r[3]] = r[-1]
        return [dict(zip(DOC_FIELDS, row), topics=json.loads(row[7]), trusted=bool(row[8])) for row in (self._docs[i] for i in ids)]

    def _read_all_docs(self) -> None:
        """Every document's fields (as rows: about 0.5 KB each) and every entry's summary, kept for this generation."""
        self._docs = {r[0]: r[1:] for r in self.conn.execute(f"SELECT id, {', '.join(DOC_FIELDS)} FROM docs")}
        self._summaries = {row[2]: row[3] for row in self._docs.values() if row[0] == "entry"}
        self._all_docs = True

    def entry_summary(self, entry_id: str) -> str:
        if entry_id not in self._summaries:
            if self._all_docs:
                return ""
            if len(self._summaries) > HELD_DOCS:
                self._summaries = {}
            row = self.conn.execute("SELECT text FROM docs WHERE entry = %s AND kind = 'entry'", (entry_id,)).fetchone()
            self._summaries[entry_id] = row[0] if row else ""
        return self._summaries[entry_id]


# -- what this clone's files are -------------------------------------------------------------------
def _seen_path(layout: Layout) -> Path:
    return Layout(layout.root).cache_dir / SEEN_FILE


def _read_seen(layout: Layout) -> dict[str, list]:
    """source -> [stat signature, sha256] this clone last pushed or read; {} when none or unreadable."""
    text = confine.read_optional_text(_seen_path(layout), C.MAX_STORE_FILE_BYTES, [])
    try:
        seen = json.loads(text) if text else {}
    except ValueError:
        return {}
    return seen if isinstance(seen, dict) and all(isinstance(v, list) and len(v) == 2 for v in seen.values()) else {}


def _local_files(layout: Layout) -> dict[str, Path]:
    return {source_key(layout, p): p for p in [*layout.day_files(), *layout.markdown_files()]}


def _hashes(files: dict[str, Path], seen: dict[str, list]) -> dict[str, list]:
    """source -> [stat signature, sha256] now; a file whose stat is what `seen` recorded is not read."""
    out: dict[str, list] = {}
    for key, path in files.items():
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        sig = f"{st.st_size}:{st.st_mtime_ns}"
        if key in seen and seen[key][0] == sig:
            out[key] = seen[key]
        else:
            out[key] = [sig, hashlib.sha256(path.read_bytes()).hexdigest()]
    return out


def attach(layout: Layout) -> None:
    """Record this clone's files as they are, the first time it uses the shared cache (before it writes
    anything): what it changes from then on is what it pushes. A clone behind the cache pushes
    nothing of what it has not changed."""
    path = _seen_path(layout)
    if not os.path.lexists(path):
        confine.safe_folder(path.parent, create=True)
        atomic_write_text(path, json.dumps(_hashes(_local_files(layout), {}), sort_keys=True))


# -- writing ----------------------------------------------------------------------------------------
def refresh(url: str, layout: Layout, embedder, progress=None, errors: list[str] | None = None, known=None, full: bool = False) -> bool:
    """Push this clone's changed source files to the shared cache in one transaction (see the module
    docstring for which). `full` (`memory reindex`): make the cache match this clone's files exactly.
    Returns whether anything changed."""
    conn = connect(url)
    try:
        return push(conn, layout, embedder, progress, errors, known, full)
    finally:
        conn.close()


def open_view(url: str, layout: Layout, embedder, progress=None, errors: list[str] | None = None) -> PgView:
    """The shared cache with this clone's changes pushed first, as a read snapshot (one connection for both)."""
    conn = connect(url)
    try:
        push(conn, layout, embedder, progress, errors)
        return PgView(conn)
    except BaseException:
        conn.close()
        raise


def push(conn, layout: Layout, embedder, progress=None, errors: list[str] | None = None, known=None, full: bool = False) -> bool:
    """refresh on an open connection. What to push is planned first without the lock (a search whose
    clone changed nothing takes no lock and writes nothing), then again under it."""
    errors = [] if errors is None else errors
    seen = _read_seen(layout)
    now = _hashes(_local_files(layout), seen)
    if not full and now == seen:  # this clone changed nothing: one look at the cache's version and model, not at every source
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("version") == CACHE_VERSION and meta.get("model") == embedder.model:
            return False
    with conn.transaction():
        plan = _plan(conn, embedder, seen, now, full)
    if any(plan[:3]):
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
            plan = _plan(conn, embedder, seen, now, full)
            if any(plan[:3]):
                _apply(conn, layout, embedder, *plan, {k: now[k][1] for k in plan[1]}, known, errors, progress)
    if any(plan[:3]) and (plan[0] or full):  # statistics and the visibility map after a bulk change: postings are then read from the index alone
        conn.execute("VACUUM (ANALYZE) docs, postings, docvecs, groups")
    if now != seen:
        atomic_write_text(_seen_path(layout), json.dumps(now, sort_keys=True))
    return any(plan[:3])


def _plan(conn, embedder, seen: dict, now: dict, full: bool) -> tuple[bool, list[str], list[str], dict]:
    """(rebuild, sources to read again, sources to remove, the cache's meta)."""
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    rebuild = meta.get("version") != CACHE_VERSION or meta.get("model") != embedder.model
    held = dict(conn.execute("SELECT key, sha FROM sources").fetchall())
    if rebuild or full:
        changed = sorted(k for k in now if rebuild or held.get(k) != now[k][1])
        removed = sorted(set(held) - set(now))
    else:  # what this clone changed since it last pushed or recorded it (attach: a file new to it since counts as changed)
        changed = sorted(k for k in now if held.get(k) != now[k][1] and (k not in seen or seen[k][1] != now[k][1]))
        removed = sorted(k for k in seen if k not in now and k in held)
    return rebuild, changed, removed, meta


def _apply(conn, layout: Layout, embedder, rebuild: bool, changed: list[str], removed: list[str], meta: dict, shas: dict, known, errors, progress) -> None:
    if rebuild:
        conn.execute(f"TRUNCATE {', '.join(REBUILT)}, meta CASCADE")
        meta = {}
    gone = [*changed, *removed]
    conn.execute("DELETE FROM docs WHERE source = ANY(%s)", (gone,))
    conn.execute("DELETE FROM entries WHERE source = ANY(%s)", (gone,))
    conn.execute("DELETE FROM sources WHERE key = ANY(%s)", (gone,))
    declared = [Declared(i, ts, json.loads(s)) for i, ts, s in conn.execute("SELECT id, timestamp, supersedes FROM entries WHERE supersedes != '[]'")]
    groups = dict(conn.execute("SELECT key, id FROM groups").fetchall())
    next_id = conn.execute("SELECT coalesce(max(id), -1) + 1 FROM docs").fetchone()[0]
    read: list[Entry] = []
    stored_with: dict[str, str] = {}
    parsed = known.days if known is not None else {}
    fresh = known.vectors if known is not None else {}
    ordered = sorted(changed, key=lambda s: s.endswith(".md"))  # day files, then Markdown: the order one read of them all gives
    for at in range(0, len(ordered), BUILD_BATCH):
        docs, entries = collect_docs(layout, errors, only=ordered[at : at + BUILD_BATCH], parsed=parsed)
        read += [e for e in entries if e.supersedes]
        newer = superseded_by([*declared, *read])
        for d in docs:
            if d.entry:
                d.superseded_by = stored_with[d.entry] = newer.get(d.entry, "")
        day_of = {d.entry: d.source for d in docs if d.kind == "entry"}
        with conn.cursor().copy("COPY entries (id, source, timestamp, supersedes) FROM STDIN") as cp:
            for e in entries:
                cp.write_row((e.id, day_of[e.id], e.timestamp, json.dumps(list(e.supersedes))))
        by_id = {e.id: e for e in entries}
        keys = [entry_vector_key(by_id[d.ref]) if d.kind == "entry" else chunk_key(d.index_text) for d in docs]
        vectors = _embed(conn, layout, embedder, docs, keys, by_id, fresh, errors, progress)
        next_id = _insert_docs(conn, docs, keys, vectors, groups, next_id)
    with conn.cursor().copy("COPY sources (key, sha) FROM STDIN") as cp:
        for s in changed:
            cp.write_row((s, shas[s]))
    newer = superseded_by([*declared, *read])
    old = json.loads(meta.get("newer", "{}"))
    stale = {i for i, given in stored_with.items() if newer.get(i, "") != given} | {i for i in {*old, *newer} if old.get(i) != newer.get(i)}
    conn.cursor().executemany("UPDATE docs SET superseded_by = %s WHERE entry = %s", [(newer.get(i, ""), i) for i in stale])
    if rebuild:
        conn.execute("DELETE FROM vectors v WHERE v.model = %s AND NOT EXISTS (SELECT 1 FROM docs d WHERE d.vkey = v.key)", (embedder.model,))
        conn.execute(  # for this transaction, unless the server's own setting is larger
            "SELECT set_config('maintenance_work_mem', %s, true) WHERE pg_size_bytes(current_setting('maintenance_work_mem')) < pg_size_bytes(%s)",
            (HNSW_BUILD_MEMORY, HNSW_BUILD_MEMORY),
        )
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS docvecs_hnsw_{int(embedder.dim)} ON docvecs USING hnsw ((vec::vector({int(embedder.dim)})) vector_cosine_ops)"
        )
    # anti-joins, not NOT IN: over work_mem (a million ids) PostgreSQL runs NOT IN's subquery once per row
    missing = conn.execute("SELECT count(*) FROM docs d WHERE NOT EXISTS (SELECT 1 FROM docvecs v WHERE v.id = d.id)").fetchone()[0]
    total = conn.execute("SELECT count(*) FROM docs").fetchone()[0]
    _write_meta(
        conn,
        version=CACHE_VERSION,
        model=embedder.model,
        dim=str(embedder.dim),
        newer=json.dumps(newer),
        vectors_missing=str(missing),
        vectors_total=str(total),
    )


def _write_meta(conn, **values: str) -> None:
    values["generation"] = uuid.uuid4().hex
    conn.cursor().executemany("INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", [(k, v) for k, v in values.items()])


def _insert_docs(conn, docs: list[Doc], keys: list[str], vectors: dict[str, np.ndarray], groups: dict[str, int], next_id: int) -> int:
    """Insert `docs` with ids from `next_id` on, with their groups, postings, words and vectors; returns
    the next id. `groups`: result key -> group id of every group held (new ones are added to it)."""
    new_groups: list[tuple[int, str]] = []
    seen: set[str] = set()
    rows, postings, vec_rows = [], [], []
    next_group = max(groups.values(), default=-1) + 1  # a new group: the next id after every one held, as the SQLite cache numbers them
    for j, (d, key) in enumerate(zip(docs, keys)):
        i = next_id + j
        g = groups.get(gkey := d.entry or d.ref)
        if g is None:
            g = groups[gkey] = next_group
            next_group += 1
            new_groups.append((g, gkey))
        ws = words(d.index_text)
        ts = terms(ws) or [""]
        seen.update(ws)
        topics = json.dumps(list(d.topics), ensure_ascii=False)
        rows.append(
            (i, d.source, d.kind, d.ref, d.entry, d.text, d.session, d.ts, d.importance, topics, d.trusted, d.line, d.superseded_by, key)
            + (g, len(ts), d.pinned, doc_cues(ws), KIND_CODE[d.kind], IMPORTANCE_CODE.get(d.importance, 1))
        )
        counts: dict[str, int] = {}
        for t in ts:
            counts[t] = counts.get(t, 0) + 1
        postings += [(t, i, min(n, MAX_TF)) for t, n in counts.items()]
        if key in vectors:
            vec_rows.append((i, _vec_bytes(vectors[key])))
    cur = conn.cursor()
    cur.executemany("INSERT INTO groups VALUES (%s, %s)", new_groups)
    with cur.copy(f"COPY docs ({', '.join(DOC_COLUMNS)}) FROM STDIN") as cp:
        for row in rows:
            cp.write_row(row)
    with cur.copy("COPY postings (term, doc, tf) FROM STDIN") as cp:
        for row in postings:
            cp.write_row(row)
    with cur.copy("COPY docvecs (id, vec) FROM STDIN (FORMAT BINARY)") as cp:
        cp.set_types(["int8", "bytea"])  # bytea's binary form is the bytes as given: pgvector's own binary form
        for row in vec_rows:
            cp.write_row(row)
    cur.executemany("INSERT INTO words VALUES (%s) ON CONFLICT DO NOTHING", [(w,) for w in surface_words(list(seen))])
    return next_id + len(docs)


def _embed(
    conn, layout: Layout, embedder, docs: list[Doc], keys: list[str], by_id: dict[str, Entry], fresh: dict, errors: list[str], progress
) -> dict[str, np.ndarray]:
    """A vector for every key: held in the cache for this model, just computed by the caller, an entry's
    embedding file, else embedded now (entries first: their vectors average their kept transcripts'
    passages, which the chunks then reuse). An embedder failure leaves the rest without one, said in `errors`."""
    model = embedder.model
    rows = conn.execute("SELECT key, vector_send(vec) FROM vectors WHERE model = %s AND key = ANY(%s)", (model, sorted(set(keys)))).fetchall()
    held = {k: _vecs_from(v, embedder.dim)[0].astype(np.float32) for k, v in rows} if rows else {}
    added = {k: np.asarray(fresh[k], dtype=np.float32) for k in keys if k in fresh and k not in held}
    missing = {k: d for d, k in zip(docs, keys) if k not in held and k not in added}
    embed_missing(layout, embedder, missing, keys, by_id, held, added, errors, progress)
    with conn.cursor().copy("COPY vectors (model, key, vec) FROM STDIN (FORMAT BINARY)") as cp:
        cp.set_types(["text", "text", "bytea"])
        for k, v in added.items():
            cp.write_row((model, k, _vec_bytes(v)))
    return {**added, **held}


def purge(url: str, layout: Layout, entry_ids: list[str], passage_keys: Sequence[str] = ()) -> int:
    """`memory forget` on the shared cache, in one transaction: these entries' documents (their
    postings and vectors with them), records and groups, the vectors only they used, and the words
    as written whose stem no document holds any more. Their day files are marked as changed, so the
    next push reads them again. Returns the documents removed."""
    if not entry_ids:
        return 0
    conn = connect(url)
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
            ids = list(entry_ids)
            rows = conn.execute("SELECT id, vkey, source FROM docs WHERE entry = ANY(%s)", (ids,)).fetchall()
            keys = sorted({k for _, k, _ in rows} | {f"text:{i}" for i in ids} | set(passage_keys))
            for table, column in (("docs", "entry"), ("entries", "id"), ("groups", "key")):
                conn.execute(f"DELETE FROM {table} WHERE {column} = ANY(%s)", (ids,))
            conn.execute("DELETE FROM vectors v WHERE v.key = ANY(%s) AND NOT EXISTS (SELECT 1 FROM docs d WHERE d.vkey = v.key)", (keys,))
            conn.cursor().executemany("DELETE FROM vectors WHERE key >= %s AND key < %s", [(f"entry:{i}:", f"entry:{i};") for i in ids])
            conn.execute("UPDATE sources SET sha = '-' WHERE key = ANY(%s)", (sorted({s for _, _, s in rows}),))
            held = {t for (t,) in conn.execute("SELECT DISTINCT term FROM postings")}
            ws = [w for (w,) in conn.execute("SELECT word FROM words")]
            conn.execute("DELETE FROM words WHERE word = ANY(%s)", ([w for w, stem in zip(ws, stem_words(ws)) if stem not in held],))
            _write_meta(conn)
    finally:
        conn.close()
    return len(rows)
