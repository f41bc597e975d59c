"""index.json, the master index of Layer 2: a header, then one compact line per live entry in
(timestamp, id) order, so a changed entry is a one-line diff and `jq` reads it whole. It is written
whole, never patched: from the cache's entry lines (memtool/search/build.py, table entries)
when the cache holds every live day file as it is now, else from the day files as read (no cache
yet, a write the cache has not read, a day file that cannot be read, a cache that cannot be read,
entry lines the words fill has yet to write).
Both give the same bytes for the same entries. It is git-ignored (memory/.gitignore): each clone
derives its own."""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing
from typing import Iterable

from memtool import confine
from memtool import constants as C
from memtool.cache import CACHE_VERSION, file_sig, open_state
from memtool.dayfile import conflict_line, load_json, read_day
from memtool.errors import StoreCorrupt, UnsafePath
from memtool.fsutil import atomic_write_bytes
from memtool.models import Entry


def index_document(provider: str, entries: Iterable[Entry | dict]) -> bytes:
    """index.json of these entries (dicts: entries in their on-disk form, Entry.to_dict)."""
    dicts = sorted((e if isinstance(e, dict) else e.to_dict() for e in entries), key=lambda d: (d["timestamp"], d["id"]))
    lines = [json.dumps(d, ensure_ascii=False).encode("utf-8") for d in dicts]
    return b"".join(_index_pieces(provider, lines, dicts[-1]["timestamp"] if dicts else None))


def _index_pieces(provider: str, lines: list[bytes], latest: str | None) -> list[bytes]:
    """index.json in pieces to write one after another (the entry lines joined once: each copy of
    megabytes costs): the header indented, then one entry a line (`lines`: UTF-8, or runs of them
    already apart by ',\n    '). last_updated is the newest entry's timestamp (not a clock time), so
    two clones holding the same entries write the same bytes."""
    head = json.dumps({"version": C.INDEX_VERSION, "provider": provider, "last_updated": latest}, indent=2, ensure_ascii=False)[:-2]
    if not lines:
        return [head.encode("utf-8") + b',\n  "entries": []\n}\n']
    return [head.encode("utf-8") + b',\n  "entries": [\n    ', b",\n    ".join(lines), b"\n  ]\n}\n"]


def _cache_lines(layout) -> tuple[list[bytes], str | None] | None:
    """The live entries' lines from the cache in index.json's order (one run), and the newest timestamp;
    None when the cache is not there, cannot be read, or does not hold every live day file with the
    signature it has now, or a day file it holds no entry of cannot be read (an unreadable file's
    entries are kept by the fallback, from the old index.json), or an entry's line is still missing."""
    from memtool.search.docs import source_key

    conn = open_state(layout, create=False)
    if conn is None:
        return None
    with closing(conn):
        try:
            conn.execute("BEGIN")
            with conn:
                if conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone() != (CACHE_VERSION,):
                    return None
                held = conn.execute(
                    "SELECT key, sig, (SELECT count(*) FROM entries WHERE source = key) FROM sources WHERE archived = 0 AND key LIKE '%.json'"
                ).fetchall()
                folder = source_key(layout, layout.index_dir)
                files = {f"{folder}/{p.name}": p for p in layout.day_files()}
                if {k: sig for k, sig, _ in held} != {k: file_sig(p) for k, p in files.items()}:
                    return None
                for key, _, count in held:
                    if count == 0:
                        read_day(files[key])  # an empty day, or an unreadable one: StoreCorrupt
                if conn.execute("SELECT 1 FROM entries WHERE archived = 0 AND line = '' LIMIT 1").fetchone():
                    return None  # lines the words fill has yet to write (a fresh clone's deferred entries)
                # the body made in one piece by SQLite, in the order of the index entries_order: no row
                # of Python objects per entry, and no sort that carries every line
                body, latest = conn.execute(
                    "SELECT CAST(group_concat(line, ',\n    ') AS BLOB), max(timestamp) FROM "
                    "(SELECT line, timestamp FROM entries WHERE archived = 0 ORDER BY timestamp, id)"
                ).fetchone()
        except (sqlite3.Error, OSError, StoreCorrupt, UnicodeDecodeError):
            return None
    return ([body] if body else []), latest


def _from_day_files(layout, provider: str) -> tuple[list[bytes], list[str]]:
    """index.json from the day files, as read, and those that cannot be read (their entries kept from
    the old index.json); an id in two day files is listed once, the later file's copy (as in a cache
    built from scratch)."""
    errors: list[str] = []
    kept: dict[str, Entry] = {}
    bad_days: set[str] = set()
    for path in layout.day_files():
        try:
            kept.update((e.id, e) for e in read_day(path))
        except (StoreCorrupt, UnicodeDecodeError) as exc:
            errors.append(str(exc))
            bad_days.add(path.stem)
    kept = {**{e.id: e for e in kept_entries(layout, bad_days)}, **kept}
    return [index_document(provider, kept.values())], errors


def kept_entries(layout, days: set[str]) -> list[Entry]:
    """The entries of these days in the current index.json (those of day files that cannot be read
    now, so one bad file never drops anything); none when it cannot be read."""
    try:
        old = load_json(layout.index_file).get("entries", []) if days else []
        return [Entry.from_dict(d) for d in old if str(d.get("timestamp", ""))[:10] in days]
    except (OSError, StoreCorrupt, UnicodeDecodeError, AttributeError):
        return []  # the old index is itself unreadable: nothing to keep from it


def write_index(layout, provider: str, explain: bool = False) -> tuple[str, list[str]]:
    """Write index.json from the cache, else from the day files, unless it already holds those bytes
    (it is read only when of their size, or to `explain` why it changed). Returns why it was written
    ('': it was not) and the day files that cannot be read (from the cache: none). Caller holds the
    root's lock, so no day file changes between the check and the write."""
    stored = _cache_lines(layout)
    pieces, errors = (_index_pieces(provider, *stored), []) if stored is not None else _from_day_files(layout, provider)
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
    return why, errors
