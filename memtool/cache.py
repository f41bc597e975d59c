"""The cache: one SQLite file, memory/.cache/memtool.sqlite (WAL), derived from the versioned files and
rebuilt from them when it is missing, damaged or of another version. This module is its one home:
the file, its connection and pragmas, its schema and versions, and the state tables kept across
rebuilds of the search tables (use counts, the compressor's word counts, the sync manifest). Stdlib
only: a `memory log` reads the stored model without loading numpy.

The search tables (SCHEMA, written by memtool/search/build.py, read by memtool/search/read.py): each
source file read (day files, Markdown files) with the stat signature it was read at; each entry's day
file, supersedes list and kept transcript's signature; one row per searchable
document (memtool/search/docs.py); the BM25 postings of the analysed terms as per-term blocks of
document ids and term counts; the documents' words as written (typo matching); vectors as float16
blobs keyed by model and content hash; and a packed copy of the per-document numbers a search filters
and ranks by (`columns`), so that opening the cache for a search reads one blob.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing, suppress
from pathlib import Path
from typing import Iterable

from memtool import confine
from memtool import constants as C
from memtool.errors import LockBusy, UnsafePath
from memtool.fsutil import stat_sig
from memtool.store import Layout
from memtool.text import WORDS_VERSION

CACHE_VERSION = f"4.{WORDS_VERSION}"  # the documents' layout, and the word rules the postings were analysed by (the PostgreSQL cache's too)
SQLITE_VERSION = f"{CACHE_VERSION}-2"  # and the search tables of this file (2: no index.json lines in `entries`)
WRITE_WAIT_S = 300  # how long a compress or a sync waits for another process's change set
READ_WAIT_S = 2.0  # how long a read waits out a brief exclusive lock (the checkpoint as another process's last connection closes)
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sources(key TEXT PRIMARY KEY, sig TEXT NOT NULL, archived INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS entries(id TEXT PRIMARY KEY, source TEXT NOT NULL, timestamp TEXT NOT NULL,
    supersedes TEXT NOT NULL, transcript TEXT NOT NULL, archived INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS entries_source ON entries(source);
CREATE TABLE IF NOT EXISTS groups(id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS docs(id INTEGER PRIMARY KEY, source TEXT NOT NULL, kind TEXT NOT NULL, ref TEXT NOT NULL,
    entry TEXT NOT NULL, text TEXT NOT NULL, session TEXT NOT NULL, ts REAL NOT NULL, importance TEXT NOT NULL,
    topics TEXT NOT NULL, trusted INTEGER NOT NULL, line INTEGER NOT NULL, superseded_by TEXT NOT NULL, vkey TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS docs_source ON docs(source);
CREATE INDEX IF NOT EXISTS docs_entry ON docs(entry);
CREATE TABLE IF NOT EXISTS postings(term TEXT NOT NULL, docs BLOB NOT NULL, tfs BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS postings_term ON postings(term);
CREATE TABLE IF NOT EXISTS words(word TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vectors(model TEXT NOT NULL, key TEXT NOT NULL, vec BLOB NOT NULL, PRIMARY KEY(model, key));
CREATE TABLE IF NOT EXISTS columns(name TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS docvecs(id INTEGER PRIMARY KEY, vec BLOB NOT NULL);
"""
REBUILT_TABLES = ("sources", "entries", "groups", "docs", "postings", "words", "columns", "docvecs")  # vectors survive a rebuild

# -- state besides the search: its own tables, kept across rebuilds of the search tables -----------
# The compressor's word counts per day file (memtool/docfreq.py), how often each entry was returned
# (access_counts), what the last sync saw of each file (memtool/sync_scan.py), and index.json's lines
# of each day file with the stat it was read at (memtool/index_json.py; `rank`: a readable day file's
# copy of an id is listed over a kept one, then the later day's). A rebuild of the
# search tables (another SQLITE_VERSION or model, `reindex --full`, compaction) leaves them alone, so
# their layout has its own version, PRAGMA user_version; only a cache discarded as damaged loses them.
STATE_VERSION = 4
STATE_SCHEMA = """
CREATE TABLE IF NOT EXISTS day_words(day TEXT PRIMARY KEY, sig TEXT NOT NULL, entries INTEGER NOT NULL, counts TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS access(id TEXT PRIMARY KEY, uses INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sync_state(name TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS index_days(day TEXT PRIMARY KEY, sig TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS index_lines(day TEXT NOT NULL, id TEXT NOT NULL, rank TEXT NOT NULL, timestamp TEXT NOT NULL, line TEXT NOT NULL,
    PRIMARY KEY(day, id));
CREATE INDEX IF NOT EXISTS index_lines_id ON index_lines(id, rank);
CREATE INDEX IF NOT EXISTS index_lines_order ON index_lines(timestamp, id);
"""
STATE_TABLES = ("day_words", "access", "sync_state", "index_days", "index_lines")
STATE_WAIT_S = 0.5  # how long a write of this state waits for another process's change set before it is skipped


def cache_path(layout: Layout) -> Path:
    return Layout(layout.root).cache_dir / C.CACHE_FILE


def file_sig(path: Path | os.DirEntry) -> str:
    """fsutil.stat_sig as the text the cache keeps: "size:mtime_ns", "-" when not there."""
    return str(stat_sig(path) or "-")


def connect(path: Path, timeout: float = READ_WAIT_S) -> sqlite3.Connection:
    """The cache, opened in autocommit mode (transactions are begun explicitly), WAL. Its folder must be
    reached without a link (UnsafePath otherwise: nothing is written out of the root); a cache file,
    WAL or shared-memory file that is a link, a FIFO or a device (a clone's .cache) is removed, so the
    cache is rebuilt rather than read through it."""
    confine.safe_folder(path.parent, create=True)
    for name in (str(path), f"{path}-wal", f"{path}-shm"):
        if os.path.lexists(name) and not confine.is_regular(name):
            with suppress(FileNotFoundError):  # gone meanwhile: another process's last connection closed (and removed its WAL)
                os.unlink(name)
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
    if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")  # derived: a power cut may lose the last commit, never tear one
    conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed: a forgotten entry's text outlives no change set
    _ensure_state(conn)
    return conn


def _ensure_state(conn: sqlite3.Connection) -> None:
    """Create the state tables (dropping those of another STATE_VERSION). Skipped while another process
    writes (the next connection does it) and in a read-only cache (searched as it is)."""
    if conn.execute("PRAGMA user_version").fetchone()[0] == STATE_VERSION:
        return
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError:
        return
    with conn:  # commits, or rolls back on any exception (so does each `with conn` after a BEGIN here)
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version != STATE_VERSION:
            for table in STATE_TABLES:
                conn.execute(f"DROP TABLE IF EXISTS {table}")
            create(conn, STATE_SCHEMA)
            conn.execute(f"PRAGMA user_version = {STATE_VERSION}")


def create(conn: sqlite3.Connection, schema: str = SCHEMA) -> None:
    """Run each statement of `schema` inside the transaction begun (executescript would commit it first)."""
    for statement in schema.split(";"):
        if statement.strip():
            conn.execute(statement)


def reset(conn: sqlite3.Connection) -> None:
    """Empty the search tables and their meta (vectors are kept), in the transaction begun."""
    for table in (*REBUILT_TABLES, "meta"):
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    create(conn)


def begin_writing(conn: sqlite3.Connection, path: Path) -> None:
    """BEGIN IMMEDIATE; LockBusy when another process holds the write lock past the busy timeout."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if "locked" not in str(exc):
            raise
        raise LockBusy(f"{path}: another memtool process is writing the search cache; try again when it is done") from None


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    try:
        return dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.OperationalError:  # no tables yet
        return {}


def open_state(layout: Layout, create: bool = True) -> sqlite3.Connection | None:
    """The cache, to read or write the state above; None when it cannot be opened (a read-only or
    damaged cache; not there, unless `create`): the caller then works the state out afresh, and a
    search rebuilds the cache."""
    path = cache_path(layout)
    if not create and not path.is_file():
        return None
    try:
        return connect(path, timeout=STATE_WAIT_S)
    except (sqlite3.Error, OSError, UnsafePath):
        return None


def read_state(layout: Layout, query: str) -> list[tuple] | None:
    """The rows of `query` over the state; None when there is no cache or it cannot be read."""
    conn = open_state(layout, create=False)
    if conn is not None:
        with closing(conn), suppress(sqlite3.Error):
            return conn.execute(query).fetchall()
    return None


def write_state(layout: Layout, changes: list[tuple[str, Iterable[tuple]]], create: bool = True) -> bool:
    """Run each (statement, rows) in one transaction. False, nothing written, when there is no cache
    (unless `create`), another process held it longer than STATE_WAIT_S or it cannot be written: the
    state is derived, and a reader works it out again."""
    conn = open_state(layout, create)
    if conn is None:
        return False
    with closing(conn):
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            return False
        try:
            with conn:
                for statement, rows in changes:
                    conn.executemany(statement, rows)
        except sqlite3.OperationalError:  # disk full, read-only
            return False
    return True


# Use counts: how often each entry was returned by a query (search, context, the MCP tools). Kept in the
# cache (table `access`), never in the versioned files, so reading memory never dirties git; an
# increment is one upsert, so concurrent searches never lose each other's counts (except when one gives up
# waiting, STATE_WAIT_S). They survive every rebuild of the search tables and are lost only with a cache
# discarded as damaged: they only tune ranking (`access_boost`, off by default), so that costs nothing else.
def access_counts(layout: Layout) -> dict[str, int]:
    """id -> times returned; none when the cache cannot be read."""
    return dict(read_state(layout, "SELECT id, uses FROM access") or ())


def count_access(layout: Layout, ids: Iterable[str]) -> None:
    """Add one use to each id (an id repeated in one answer counts once). Skipped quietly when the
    cache cannot be written (read-only checkout): counts only tune ranking, and a search must not
    fail for them."""
    if ids := list(dict.fromkeys(ids)):
        write_state(layout, [("INSERT INTO access VALUES (?, 1) ON CONFLICT(id) DO UPDATE SET uses = uses + 1", [(i,) for i in ids])])


def stored_model(layout: Layout) -> str | None:
    """The model of the cache's vectors, read only (no cache or state made); None when there is no cache
    (or it is a link, a FIFO or a device: a clone's .cache), or it is damaged or being created. Opened
    for writing where it can be, so that closing the last connection removes the WAL files a read
    makes; read-only where it cannot (a read-only checkout)."""
    path = cache_path(layout)
    if not confine.is_regular(path):
        return None
    with suppress(sqlite3.Error):
        try:
            conn = sqlite3.connect(f"{path.as_uri()}?mode=rw", uri=True)
            conn.execute("PRAGMA schema_version")  # opens the file: a read-only one fails here
        except sqlite3.OperationalError:
            conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        with closing(conn):
            row = conn.execute("SELECT value FROM meta WHERE key = 'model'").fetchone()
            return row[0] if row else None
    return None


def discard(layout: Layout) -> None:
    """Remove the cache (damaged, or holding text that must go): the next search rebuilds it."""
    path = cache_path(layout)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
