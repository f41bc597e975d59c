"""index.json, the master index of Layer 2: a header, then one compact line per live entry in
(timestamp, id) order, so a changed entry is a one-line diff and `jq` reads it whole. It is written
whole, never patched, always from the cache's table of entry lines (memtool/cache.py, index_lines),
which each write first brings up to date by reading again the day files whose stat changed: a day
file that cannot be read keeps the lines it had (none yet: its day's entries in the old index.json).
When the cache cannot be written, index.json is left as it was and the write says so: the next one
writes it. It is git-ignored (memory/.gitignore): each clone derives its own."""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from typing import Iterable

from memtool import confine
from memtool import constants as C
from memtool.cache import WRITE_WAIT_S, cache_path, connect, discard, file_sig
from memtool.dayfile import ParsedDays, conflict_line, load_json, read_day
from memtool.errors import StoreCorrupt, UnsafePath
from memtool.fsutil import atomic_write_bytes
from memtool.models import Entry

# the entry lines in index.json's order (a readable day file's copy of an id over a kept one, else the
# later day file's: as a cache built from scratch holds it), made in one piece by SQLite: no row of
# Python objects per entry, and no sort that carries every line (the index index_lines_order)
BODY = (
    "SELECT CAST(group_concat(line, ',\n    ') AS BLOB), max(timestamp) FROM (SELECT line, timestamp FROM index_lines a "
    "WHERE NOT EXISTS (SELECT 1 FROM index_lines b WHERE b.id = a.id AND b.rank > a.rank) ORDER BY timestamp, id)"
)


def index_document(provider: str, entries: Iterable[Entry | dict]) -> bytes:
    """index.json of these entries (dicts: entries in their on-disk form, Entry.to_dict)."""
    dicts = sorted((e if isinstance(e, dict) else e.to_dict() for e in entries), key=lambda d: (d["timestamp"], d["id"]))
    lines = [json.dumps(d, ensure_ascii=False).encode("utf-8") for d in dicts]
    return b"".join(_index_pieces(provider, [b",\n    ".join(lines)] if lines else [], dicts[-1]["timestamp"] if dicts else None))


def _index_pieces(provider: str, body: list[bytes], latest: str | None) -> list[bytes]:
    """index.json in pieces to write one after another (each copy of megabytes costs): the header
    indented, then the entry lines (`body`: one run of UTF-8 lines apart by ',\n    ', or none).
    last_updated is the newest entry's timestamp (not a clock time), so two clones holding the same
    entries write the same bytes."""
    head = json.dumps({"version": C.INDEX_VERSION, "provider": provider, "last_updated": latest}, indent=2, ensure_ascii=False)[:-2]
    if not body:
        return [head.encode("utf-8") + b',\n  "entries": []\n}\n']
    return [head.encode("utf-8") + b',\n  "entries": [\n    ', *body, b"\n  ]\n}\n"]


def _rows(day: str, entries: Iterable[Entry], readable: bool) -> list[tuple[str, str, str, str, str]]:
    rank = f"{int(readable)} {day}"
    return [(day, e.id, rank, e.timestamp, json.dumps(e.to_dict(), ensure_ascii=False)) for e in entries]


def _bring_up_to_date(conn: sqlite3.Connection, layout, parsed: ParsedDays | None, full: bool) -> list[str]:
    """Read again the day files whose stat is not the one their lines were read at (the stat taken
    before reading: one saved meanwhile is read again next time; `full`: every one), drop the lines
    of those gone, in the transaction begun; returns the errors of those that cannot be read."""
    if full:
        conn.execute("DELETE FROM index_days")
        conn.execute("DELETE FROM index_lines")
    held = dict(conn.execute("SELECT day, sig FROM index_days").fetchall())
    now = {p.stem: (p, file_sig(p)) for p in layout.day_files()}
    gone = [(day,) for day in held if day not in now]
    errors: list[str] = []
    unread: set[str] = set()
    fresh: list[tuple[str, str, str, str, str]] = []
    changed: list[tuple[str, str]] = []
    for day, (path, sig) in now.items():
        if held.get(day) == sig:
            continue
        try:
            entries = read_day(path, parsed)
        except (StoreCorrupt, UnicodeDecodeError) as exc:
            errors.append(str(exc))
            if day not in held:  # none of its lines yet: its day's entries in the old index.json, under no stat
                unread.add(day)
                changed.append((day, ""))
            continue  # its stat is not recorded: read again by each write, its lines kept until it can be
        gone.append((day,))
        changed.append((day, sig))
        fresh += _rows(day, {e.id: e for e in entries}.values(), True)
    for e in kept_entries(layout, unread):
        fresh += _rows(e.day, [e], False)
    conn.executemany("DELETE FROM index_lines WHERE day = ?", gone)
    conn.executemany("DELETE FROM index_days WHERE day = ?", gone)
    conn.executemany("INSERT OR REPLACE INTO index_lines VALUES (?, ?, ?, ?, ?)", fresh)
    conn.executemany("INSERT INTO index_days VALUES (?, ?)", changed)
    return errors


def kept_entries(layout, days: set[str]) -> list[Entry]:
    """The entries of these days in the current index.json (those of day files that cannot be read
    now, so one bad file never drops anything); none when it cannot be read."""
    try:
        old = load_json(layout.index_file).get("entries", []) if days else []
        return [Entry.from_dict(d) for d in old if str(d.get("timestamp", ""))[:10] in days]
    except (OSError, StoreCorrupt, UnicodeDecodeError, AttributeError):
        return []  # the old index is itself unreadable: nothing to keep from it


def _lines(path, layout, parsed: ParsedDays | None, full: bool) -> tuple[bytes | None, str | None, list[str]]:
    with closing(connect(path, timeout=WRITE_WAIT_S)) as conn:
        conn.execute("BEGIN IMMEDIATE")
        with conn:
            errors = _bring_up_to_date(conn, layout, parsed, full)
            body, latest = conn.execute(BODY).fetchone()
    return body, latest, errors


@dataclass
class IndexWrite:
    why: str = ""  # why index.json was written: 'missing', 'stale', ...; '' when it was not
    unreadable: list[str] = field(default_factory=list)  # the day files that cannot be read (their lines kept)
    not_written: str = ""  # why the cache could not be brought up to date, so index.json was left as it was


def write_index(layout, provider: str, explain: bool = False, parsed: ParsedDays | None = None, full: bool = False) -> IndexWrite:
    """Bring the cache's entry lines up to date (`parsed`: day files the caller read already; `full`:
    read every day file again, `memory reindex --full`), then
    write index.json from them unless it already holds those bytes (it is read only when of their
    size, or to `explain` why it changed). Caller holds the root's lock, so no day file changes
    between the check and the write but by hand."""
    path = cache_path(layout)
    try:
        try:
            body, latest, errors = _lines(path, layout, parsed, full)
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):
                raise
            discard(layout)  # damaged: made again from the files, as a search does
            body, latest, errors = _lines(path, layout, parsed, full)
    except sqlite3.OperationalError as exc:
        busy = "another memtool process is writing it" if "locked" in str(exc) else str(exc)
        return IndexWrite(not_written=f"index.json was not updated: {path} cannot be written ({busy}); the next write or `memory reindex` writes it")
    except (sqlite3.Error, OSError, UnsafePath) as exc:
        return IndexWrite(not_written=f"index.json was not updated: {path} cannot be read ({exc}); `memory reindex` writes it")
    pieces = _index_pieces(provider, [body] if body else [], latest)
    size = sum(map(len, pieces))
    try:
        same_size = os.lstat(layout.index_file).st_size == size
        old = confine.read_bytes(layout.index_file) if explain or same_size else b""
        why = "" if same_size and old == b"".join(pieces) else "git conflict markers" if conflict_line(old.decode("utf-8", "replace")) else "stale"
    except FileNotFoundError:
        why = "missing"
    except UnsafePath:
        why = "not a regular file"  # replaced: the write refuses a link, naming it
    if why:
        atomic_write_bytes(layout.index_file, pieces)
    return IndexWrite(why, errors)
