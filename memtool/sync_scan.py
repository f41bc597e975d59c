"""What changed on disk since the last sync: the manifest, and the scans that compare the files with it.

`memory reindex` and `memory watch` must not re-read 10,000 entries to find one edit. The manifest
(table sync_state of the cache, memory/.cache/memtool.sqlite) records, per day file and per
Markdown file, the (size, mtime_ns, content hash) a sync last saw, and per day file the content hash of each of its entries. A scan stats every
file and reads only those whose stat no longer matches (or was taken too close to a change to trust),
comparing them by content hash, so a touched-but-unchanged file is no change. The scans know nothing
of embedding or index.json: they say what is there, what changed and which files cannot be read
(as path:line), and `memtool.sync` decides what to redo.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from memtool import confine
from memtool import constants as C
from memtool.cache import read_state, write_state
from memtool.dayfile import ParsedDays, parse_day
from memtool.errors import StoreCorrupt, UnsafePath
from memtool.fsutil import FileSig, stat_sig
from memtool.index_json import kept_entries
from memtool.store import Layout

MANIFEST_VERSION = 3  # 1: the same records in four rows; 2: a day file's error after its entries


@dataclass
class Delta:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    def text(self) -> str:
        return f"+{len(self.added)} ~{len(self.changed)} -{len(self.removed)}"


# -- the manifest ----------------------------------------------------------------------------------
@dataclass
class Seen:
    """A file as the last sync read it: its signature and content hash (a vector file: its entry's
    content hash, verified for the model); a day or Markdown file's error ('': readable); a day
    file's entries' content hashes by id. Stored as [size, mtime_ns, sha(, error(, entries))]."""

    sig: FileSig
    sha: str
    error: str | None = None  # None: a vector file
    entries: dict[str, str] | None = None  # None: not a day file


@dataclass
class Manifest:
    model: str = ""
    written_ns: int = field(default=0, compare=False)  # when it was saved: files modified close to this are re-hashed (racy mtimes)
    index_sig: FileSig | None = None  # index.json's
    emb_dir_ns: int | None = None  # Layout.embeddings_stamp(): changes when a vector file is added, removed or replaced
    days: dict[str, Seen] = field(default_factory=dict)  # by name
    markdown: dict[str, Seen] = field(default_factory=dict)  # by path relative to the root
    vectors: dict[str, Seen] = field(default_factory=dict)  # by entry id, verified for model

    @classmethod
    def load(cls, layout: Layout) -> "Manifest | None":
        """The saved manifest (cache, table sync_state: one JSON row); None when there is
        none, or it cannot be read: start over."""
        rows = read_state(layout, "SELECT data FROM sync_state WHERE name = 'manifest'")
        try:
            data = json.loads(rows[0][0]) if rows else None
            if not isinstance(data, dict) or data.pop("version", None) != MANIFEST_VERSION:
                return None
            data.update({k: {name: Seen(FileSig(*rec[:2]), *rec[2:]) for name, rec in data.get(k, {}).items()} for k in ("days", "markdown", "vectors")})
            return cls(**{**data, "index_sig": FileSig(*data["index_sig"]) if data.get("index_sig") else None})
        except (ValueError, TypeError, IndexError, AttributeError):
            return None  # of another layout: it is derived, start over

    def save(self, layout: Layout) -> None:
        """Write it (in place of whatever sync_state held). Skipped when the cache cannot be written:
        every file is then hashed again next time."""
        self.written_ns = time.time_ns()
        files = {
            k: {name: [*rec.sig, rec.sha, *(x for x in (rec.error, rec.entries) if x is not None)] for name, rec in getattr(self, k).items()}
            for k in ("days", "markdown", "vectors")
        }
        data = json.dumps({"version": MANIFEST_VERSION, **vars(self), **files}, separators=(",", ":"))
        write_state(layout, [("DELETE FROM sync_state", [()]), ("INSERT INTO sync_state VALUES ('manifest', ?)", [(data,)])])

    @staticmethod
    def drop(layout: Layout, ids: set[str]) -> None:
        """Save the manifest without these ids (`memory forget`): their vector records, and the records
        of the day files that listed them (hashed again by the next sync)."""
        man = Manifest.load(layout)
        listed = {name for name, rec in man.days.items() if ids & (rec.entries or {}).keys()} if man else set()
        if man is not None and (listed or ids & man.vectors.keys()):
            man.days = {k: v for k, v in man.days.items() if k not in listed}
            man.vectors = {k: v for k, v in man.vectors.items() if k not in ids}
            man.save(layout)


def _entry_line(text: str, n: int) -> int:
    """Line where the n-th (1-based) object of the entries list starts; 0 if not found."""
    depth, count, in_str, esc = 0, 0, False, False
    want = 2 if text.lstrip().startswith("{") else 1
    for i, ch in enumerate(text):
        if in_str:
            esc = not esc and ch == "\\"
            in_str = esc or ch != '"'
            continue
        if ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if ch == "{" and depth == want + 1:
                count += 1
                if count == n:
                    return text.count("\n", 0, i) + 1
        elif ch in "]}":
            depth -= 1
    return 0


def _bad_utf8(path: Path, data: bytes, exc: UnicodeDecodeError, what: str) -> str:
    line = data.count(b"\n", 0, exc.start) + 1
    return f"{path}:{line}: not UTF-8 ({exc.reason}); {what}"


# -- scanning --------------------------------------------------------------------------------------
@dataclass
class Scan:
    """The files as this sync found them, and what changed since the manifest."""

    days: dict[str, Seen] = field(default_factory=dict)  # day file name -> its manifest record
    markdown: dict[str, Seen] = field(default_factory=dict)  # Markdown path relative to the root -> its record
    entries: dict[str, str] = field(default_factory=dict)  # id -> content hash
    parsed: ParsedDays = field(default_factory=dict)  # the day files parsed during the scan (read once per sync)
    days_changed: bool = False
    reread: int = 0  # files whose stat did not match (or was too recent to trust): read and hashed
    entry_delta: Delta = field(default_factory=Delta)  # entry ids; empty when every day file is as recorded
    markdown_delta: Delta = field(default_factory=Delta)  # Markdown paths relative to the root
    errors: list[str] = field(default_factory=list)  # files that cannot be read (day files first), as path:line


def scan_files(layout: Layout, man: Manifest) -> Scan:
    """Stat every day file and Markdown file; read and hash those whose stat differs from `man`."""
    scan = Scan()
    _scan_days(layout, man, scan)
    _scan_markdown(layout, man, scan)
    scan.errors = [rec.error for rec in (*scan.days.values(), *scan.markdown.values()) if rec.error]
    return scan


def _scan_days(layout: Layout, man: Manifest, scan: Scan) -> None:
    for path in layout.day_files():
        rec = man.days.get(path.name)
        try:
            st = path.stat()  # not stat_sig: a day file that cannot be stat-ed is an error, not gone
        except FileNotFoundError:
            continue  # deleted while listing: counts as removed
        sig = FileSig(st.st_size, st.st_mtime_ns)
        new = _record(path, sig, rec, man, scan, C.MAX_STORE_FILE_BYTES, lambda data: _check_day(path, sig, data, rec, scan))
        if new is None:
            continue
        scan.days[path.name] = new
        scan.days_changed = scan.days_changed or rec is None or (new.sha, new.error) != (rec.sha, rec.error)
        scan.entries.update(new.entries or {})
    unseen = {name[:-5] for name, rec in scan.days.items() if rec.error and name not in man.days}
    for e in kept_entries(layout, unseen):  # unreadable, never read before: its entries as index.json lists them
        scan.days[f"{e.day}.json"].entries[e.id] = scan.entries[e.id] = e.content_hash()  # type: ignore[index]
    if set(man.days) - set(scan.days):
        scan.days_changed = True
    if not scan.days_changed:
        return  # every day file as recorded: the same entries
    old = {i: h for rec in man.days.values() for i, h in (rec.entries or {}).items()}
    scan.entry_delta = Delta(
        added=sorted(set(scan.entries) - set(old)),
        changed=sorted(i for i, h in scan.entries.items() if i in old and old[i] != h),
        removed=sorted(set(old) - set(scan.entries)),
    )


def _scan_markdown(layout: Layout, man: Manifest, scan: Scan) -> None:
    out, delta = scan.markdown, scan.markdown_delta
    cut = len(str(layout.root)) + 1
    for path in layout.markdown_files():
        rel = str(path)[cut:].replace(os.sep, "/")
        rec = man.markdown.get(rel)
        new = _record(path, sig, rec, man, scan, C.MAX_DOC_BYTES, lambda data: _check_markdown(path, data)) if (sig := stat_sig(path)) else None
        if new is None:
            continue  # vanished while we looked
        if new is not rec and (rec is None or not new.sha or new.sha != rec.sha):  # an unsafe file has no hash: a change
            (delta.changed if rec is not None else delta.added).append(rel)
        out[rel] = new
    delta.removed = sorted(set(man.markdown) - set(out))


def _record(path: Path, sig: FileSig, rec: Seen | None, man: Manifest, scan: Scan, cap: int, check: Callable) -> Seen | None:
    """The Seen of a file of stat `sig`: `rec` while that still holds; else the file is read and
    hashed, and `check`ed (its bytes, or the UnsafePath that kept it unread; it gives the error and
    entries) when its content is not `rec`'s. None if it is gone."""
    if rec is not None and rec.sig == sig and sig.mtime_ns + C.SYNC_RACY_NS < man.written_ns:  # not taken too close to a change to trust
        return rec
    scan.reread += 1
    try:
        data = confine.read_bytes(path, cap)
    except FileNotFoundError:
        return None
    except UnsafePath as exc:  # a link out of the root, a FIFO, /dev/zero, too large: never read
        return Seen(sig, "", *check(exc))
    sha = hashlib.sha1(data).hexdigest()
    return replace(rec, sig=sig) if rec is not None and rec.sha == sha else Seen(sig, sha, *check(data))


def _check_day(path: Path, sig: FileSig, data: bytes | UnsafePath, rec: Seen | None, scan: Scan) -> tuple[str, dict[str, str]]:
    """(error, {id: content hash}) of a day file; one that cannot be read keeps its entries as last
    seen (none when never read: _scan_days takes them from index.json), reported like a damaged file."""
    kept = (rec and rec.entries) or {}
    if isinstance(data, UnsafePath):
        return str(data), kept
    try:
        entries = parse_day(path, data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return _bad_utf8(path, data, exc, "skipped, its entries kept in index.json"), kept
    except StoreCorrupt as exc:  # an entry's schema error points at the line its object starts on
        m = re.match(rf"^{re.escape(str(path))} entry (\d+): (.*)$", str(exc), re.S)
        return f"{path}:{_entry_line(data.decode('utf-8'), int(m.group(1)))}: entry {m.group(1)}: {m.group(2)}" if m else str(exc), kept
    scan.parsed[str(path)] = (sig, entries)
    return "", {e.id: e.content_hash() for e in entries}


def _check_markdown(path: Path, data: bytes | UnsafePath) -> tuple[str]:
    """(error,) of a Markdown file: one that cannot be read is never indexed."""
    if isinstance(data, UnsafePath):
        return (f"{data}; not searchable",)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (_bad_utf8(path, data, exc, "not searchable"),)
    return ("",)
