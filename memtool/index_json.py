"""index.json, the master index of Layer 2, kept in step with the day files it is derived from:
one compact line per entry in time order, patched where the written days' lines are (found by
bisecting the lines by time) and the rest copied as bytes, or rebuilt when anything else moved.
It is git-ignored (memory/.gitignore): each clone derives its own, so no commit carries it."""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import closing
from typing import Iterable

from memtool import confine
from memtool import constants as C
from memtool.dayfile import DaySigs, ParsedDays, file_sig, id_day, load_json, read_day
from memtool.errors import StoreCorrupt, UnsafePath
from memtool.fsutil import atomic_write_bytes
from memtool.models import Entry

_INDEX_OPEN = b',\n  "entries": ['
_INDEX_SEP = b",\n    "
# index.json as index_document lays it out: an entry's line starts with its id and timestamp (Entry.to_dict's order)
_INDEX_LINE_RE = re.compile(rb'\{"id": "([^"\\]*)", "timestamp": "([^"\\]*)", ')


def index_document(provider: str, entries: Iterable[Entry | dict]) -> bytes:
    """index.json: the header indented, then one compact line per entry (time order), so a changed
    entry is a one-line git diff and 10,000 entries encode in C speed. Dicts are entries already in
    their on-disk form (Entry.to_dict)."""
    dicts = [e if isinstance(e, dict) else e.to_dict() for e in entries]
    dicts.sort(key=lambda d: (d["timestamp"], d["id"]))
    return _index_bytes(provider, [json.dumps(d, ensure_ascii=False).encode("utf-8") for d in dicts])


def _index_bytes(provider: str, lines: list[bytes]) -> bytes:
    return b"".join(_index_pieces(provider, [_INDEX_SEP.join(lines)] if lines else []))


def _index_pieces(provider: str, runs: list[bytes | memoryview]) -> list[bytes | memoryview]:
    """index.json in pieces to write one after another. `runs`: entry lines, each run of them already
    apart by _INDEX_SEP (a run copied from the old file is written from a view of it, not copied)."""
    head = json.dumps({"version": C.INDEX_VERSION, "provider": provider, "last_updated": _latest(runs)}, indent=2, ensure_ascii=False)[:-2]
    body = [b"\n    ", *(p for i, run in enumerate(runs) for p in ((_INDEX_SEP, run) if i else (run,))), b"\n  "] if runs else []
    return [head.encode("utf-8"), _INDEX_OPEN, *body, b"]\n}\n"]


def _latest(runs: list[bytes | memoryview]) -> str | None:
    """last_updated: the timestamp of the newest entry (the last line: lines are in time order), so
    index.json is a function of its entries and two clones holding the same entries write the same
    bytes (a clock time there made every concurrent write a git conflict). None with no entries."""
    if not runs:
        return None
    last = runs[-1]
    tail = bytes(last[-65536:])  # the last line, unless it is longer than that
    at = tail.rfind(_INDEX_SEP)
    if at < 0 and len(last) > len(tail):
        tail, at = bytes(last), bytes(last).rfind(_INDEX_SEP)
    m = _INDEX_LINE_RE.match(tail, at + len(_INDEX_SEP) if at >= 0 else 0)
    return m.group(2).decode("utf-8") if m else None


def _index_span(data: bytes) -> tuple[int, int] | None:
    """Where the entry lines of an index.json of this version laid out as index_document writes it
    are: data[lo:cut], apart by _INDEX_SEP (lo == cut: none); None if it is anything else."""
    at = data.find(_INDEX_OPEN)
    try:
        head = json.loads(data[:at] + b"}") if at > 0 else None
    except ValueError:
        return None
    if not isinstance(head, dict) or head.get("version") != C.INDEX_VERSION:
        return None
    start = at + len(_INDEX_OPEN)
    if len(data) == start + 4 and data.endswith(b"]\n}\n"):  # compared in place: no copy of the body
        return start, start
    if data[start : start + 5] != b"\n    " or not data.endswith(b"\n  ]\n}\n") or data.find(_INDEX_SEP, 0, start) != -1:
        return None
    return start + 5, len(data) - 7


def _first_line(data: bytes, lo: int, cut: int, after) -> int:
    """Where the first entry line in data[lo:cut] (lo: a line's start) whose timestamp's day (bytes)
    satisfies `after` begins, `cut` if none: a bisection over byte positions, which holds because
    the lines are in time order and `after` is false, then true, along them. ValueError on a line
    not as index_document writes it."""

    def day(at: int) -> bytes:
        m = _INDEX_LINE_RE.match(data, at, cut)
        if m is None:
            raise ValueError(f"no entry line at byte {at}")
        return m.group(2)[:10]

    def next_line(at: int) -> int:  # the start of the first line beginning after `at`
        sep = data.find(_INDEX_SEP, at, cut)
        return sep + len(_INDEX_SEP) if sep >= 0 else cut

    a, b = lo, cut  # a: a line's start, every line before it false; b: a line's start (or cut), its line true
    while a < b:
        mid = next_line(max(a, (a + b) // 2 - len(_INDEX_SEP)))  # a line start in (a, b]
        probe = mid if mid < b else a
        if after(day(probe)):
            b = probe
        else:
            a = next_line(probe)
    return a


class IndexJson:
    """index.json upkeep, part of Store (which gives it `layout`)."""

    def rebuild_index(self, provider: str, parsed: ParsedDays | None = None, sigs: DaySigs | None = None) -> list[str]:
        """Rewrite index.json from the day files (those in `parsed` are not read again). Entries of
        unreadable day files are kept from the old index.json so that one bad file never drops
        anything. `sigs`: the day files' stats taken before `parsed` was read. Returns the problems found."""
        sigs = self._day_sigs() if sigs is None else sigs  # before reading: an edit made meanwhile shows as a change
        errors: list[str] = []
        good: list[Entry] = []
        bad_days: set[str] = set()
        for path in self.layout.day_files():
            try:
                good.extend(read_day(path, parsed))
            except (StoreCorrupt, UnicodeDecodeError) as exc:
                errors.append(str(exc))
                bad_days.add(path.stem)
        if bad_days and self.layout.index_file.is_file():
            try:
                old = load_json(self.layout.index_file)
                have = {e.id for e in good}  # an entry filed under another day than its date is read once
                good.extend(Entry.from_dict(d) for d in old.get("entries", []) if str(d.get("timestamp", ""))[:10] in bad_days and d.get("id") not in have)
            except (StoreCorrupt, AttributeError):
                pass  # the old index is itself unreadable: nothing more to keep
        self._write_index(index_document(provider, good), sigs)
        return errors

    def update_index(self, provider: str, days: set[str]) -> list[str]:
        """index.json after `write_entries` (which adds or replaces, never removes) wrote the day files
        of `days`: spliced (_splice_rows) when index.json is known to match every other day file (a
        record in the derived cache, taken at the last index write). Anything else (a crash between
        files, a hand edit, a git pull, an entry filed under another day than its date) gets the full
        rebuild. Caller holds the lock."""
        recorded = self.indexed_days()
        sigs = self._day_sigs()  # before `days` are read
        others = {name: sig for name, sig in sigs.items() if name[:-5] not in days}
        if recorded is None or others != {name: sig for name, sig in recorded.items() if name[:-5] not in days}:
            return self.rebuild_index(provider, sigs=sigs)
        try:
            fresh = [e for day in sorted(days) if (path := self.layout.day_file(day)).is_file() for e in read_day(path)]
        except (StoreCorrupt, UnicodeDecodeError):
            return self.rebuild_index(provider, sigs=sigs)  # it reports the file
        if self._splice_rows(provider, days, fresh, sigs):
            return []
        return self.rebuild_index(provider, sigs=sigs)

    def _splice_rows(self, provider: str, days: set[str], fresh: list[Entry], sigs: DaySigs) -> bool:
        """update_index's common cases without parsing every line: the lines of `days` are one run of
        index.json (for a session stored today, its end; for one dated yesterday, further in), found
        by bisecting the lines by timestamp; each of their entries is still there; and every fresh
        entry's timestamp and id name one of `days`. That run is replaced by the fresh entries and
        the lines before and after it are copied as runs of bytes: at 100,000 entries this skips
        matching 100,000 lines. False, writing nothing, in any other case (update_index then rebuilds). The caller has checked
        that index.json is the file written here last (indexed_days)."""
        if any(e.timestamp[:10] not in days or id_day(e.id) not in days for e in fresh):
            return False  # an entry filed under another day than its date: its line sorts elsewhere
        try:
            data = confine.read_bytes(self.layout.index_file)
        except (OSError, UnsafePath):
            return False
        span = _index_span(data)
        if span is None:
            return False
        lo, cut = span  # the lines: data[lo:cut], apart by _INDEX_SEP
        ids, bdays = {e.id.encode("utf-8") for e in fresh}, {d.encode("ascii") for d in days}
        first, last = min(bdays), max(bdays)
        try:
            start = _first_line(data, lo, cut, lambda day: day >= first)
            end = _first_line(data, start, cut, lambda day: day > last)
        except ValueError:
            return False  # a line not as index_document writes it
        at = start
        while at < end:  # the run of `days`: each line one of theirs, each entry still there
            m = _INDEX_LINE_RE.match(data, at, end)
            if m is None or m.group(2)[:10] not in bdays or m.group(1) not in ids:
                return False  # another day in between, or an entry of `days` left or filed elsewhere
            sep = data.find(_INDEX_SEP, at, end)
            at = sep + len(_INDEX_SEP) if sep >= 0 else end
        if len(ids) != len(fresh):
            return False
        view = memoryview(data)
        enc = sorted(fresh, key=lambda e: (e.timestamp.encode("utf-8"), e.id.encode("utf-8")))
        runs = [view[lo : start - len(_INDEX_SEP) if start < cut else cut]] if start > lo else []
        runs += [_INDEX_SEP.join(json.dumps(e.to_dict(), ensure_ascii=False).encode("utf-8") for e in enc)] if enc else []
        runs += [view[end:cut]] if end < cut else []
        self._write_index(_index_pieces(provider, runs), sigs)
        return True

    def patch_index(self, provider: str, keep: set[str], fresh: list[Entry], sigs: DaySigs) -> bool:
        """Rewrite index.json with its entries whose id is in `keep` and the `fresh` ones, as a rebuild
        would write them. False, writing nothing, unless index.json is laid out as index_document
        writes it (every line recognised) and holds each id of `keep` exactly once. `sigs`: the day files' stats taken before
        `fresh` was read. Caller holds the lock."""
        rows, wanted = self._index_rows(), {i.encode("utf-8") for i in keep}
        kept = [r for r in rows or () if r[1] in wanted]
        if rows is None or len(kept) != len(keep) or len({r[1] for r in kept}) != len(keep):
            return False
        self._write_rows(provider, kept, fresh, sigs)
        return True

    def _index_rows(self) -> list[tuple[bytes, bytes, bytes]] | None:
        """(timestamp, id, line) of each of index.json's entry lines, as UTF-8; None unless index.json
        is laid out as index_document writes it (one compact entry a line, valid UTF-8) and every line
        is recognised."""
        try:
            data = confine.read_bytes(self.layout.index_file)
            if not data.isascii():
                data.decode("utf-8")  # lines are copied as bytes: they must be text
        except (OSError, UnsafePath, UnicodeDecodeError):
            return None
        span = _index_span(data)
        if span is None:
            return None
        if span[0] == span[1]:
            return []
        lines = data.split(_INDEX_SEP)  # the whole file split once (no copy of its body): trim the first and last line
        lines[0], lines[-1] = lines[0][span[0] :], lines[-1][: span[1] - len(data)]
        rows = [(m.group(2), m.group(1), line) for line in lines if (m := _INDEX_LINE_RE.match(line)) and line.endswith(b"}")]
        return rows if len(rows) == len(lines) else None

    def _write_rows(self, provider: str, rows: list[tuple[bytes, bytes, bytes]], fresh: list[Entry], sigs: DaySigs) -> None:
        """index.json from lines copied as they are (not decoded and encoded again: ~10x faster at
        10,000 entries) and fresh entries, in the order index_document gives: by (timestamp, id), which
        UTF-8 bytes sort in as their text does."""
        enc = lambda e: (e.timestamp.encode("utf-8"), e.id.encode("utf-8"), json.dumps(e.to_dict(), ensure_ascii=False).encode("utf-8"))  # noqa: E731
        rows = [*rows, *map(enc, fresh)]
        rows.sort(key=lambda r: r[:2])
        self._write_index(_index_bytes(provider, [r[2] for r in rows]), sigs)

    def _write_index(self, data: bytes | list[bytes | memoryview], sigs: DaySigs) -> None:
        """index.json, and the record of the day files it now matches (update_index and sync trust it
        for a later patch): `sigs`, their stats taken before they were read."""
        atomic_write_bytes(self.layout.index_file, data)
        self._save_index_state(sigs)

    def indexed_days(self) -> dict[str, list[int]] | None:
        """[size, mtime_ns] of each day file as it was when index.json was last written here, while
        index.json is still that file (then it holds exactly those files' entries); None if unknown."""
        state = self._load_index_state()
        if state is None or state.get("index") != file_sig(self.layout.index_file):
            return None
        days = state.get("days")
        return days if isinstance(days, dict) else None

    def _day_sigs(self) -> DaySigs:
        return {path.name: sig for path in self.layout.day_files() if (sig := file_sig(path))}

    def _load_index_state(self) -> dict | None:
        from memtool.search.store import open_state

        conn = open_state(self.layout, create=False)
        if conn is None:
            return None  # no record (first write, cache deleted): the full rebuild makes one
        try:
            row = conn.execute("SELECT data FROM index_json_state WHERE name = 'built_from'").fetchone()
        except sqlite3.Error:
            row = None  # a store whose state tables are not made yet
        finally:
            conn.close()
        try:
            state = json.loads(row[0]) if row else None
        except ValueError:
            return None
        return state if isinstance(state, dict) else None

    def _save_index_state(self, sigs: DaySigs) -> None:
        """What index.json was built from: its own stat and every day file's (derived store, table
        index_json_state; not written when the store is busy or read-only: the next write rebuilds)."""
        from memtool.search.store import open_state, write_state

        conn = open_state(self.layout)
        if conn is not None:
            with closing(conn):
                state = {"index": file_sig(self.layout.index_file), "days": sigs}
                write_state(conn, [("INSERT OR REPLACE INTO index_json_state VALUES ('built_from', ?)", [(json.dumps(state),)])])
