"""The files: where everything lives and how it is read and written.

Per-day entry files (memory/index/YYYY-MM-DD.json) are the source of truth for Layer 2;
index.json is the master index rebuilt from them; one embedding file per entry.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from memtool import constants as C
from memtool.errors import DimensionMismatch, NotAMemoryRoot, StoreCorrupt
from memtool.fsutil import append_text, atomic_write_bytes, atomic_write_many, atomic_write_text, dumps_json, locked, write_json
from memtool.models import Entry, iso, utcnow

DAY_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
ID_DAY_RE = re.compile(rf"^{C.ENTRY_ID_PREFIX}-(\d{{4}})(\d{{2}})(\d{{2}})-")  # ids made by compress name their UTC day
CONFLICT_RE = re.compile(r"^(<{7}|={7}|>{7})( |$)", re.M)


@dataclass(frozen=True)
class Layout:
    """Where every file of a memory root lives. The folders that batch work asks for once per
    entry are joined once (cached_property: pathlib joins cost microseconds each)."""

    root: Path

    @cached_property
    def memory_dir(self) -> Path:
        return self.root / C.MEMORY_DIR

    @cached_property
    def index_dir(self) -> Path:
        return self.memory_dir / C.INDEX_DIR

    @property
    def index_file(self) -> Path:
        return self.index_dir / C.INDEX_FILE

    @cached_property
    def embeddings_dir(self) -> Path:
        return self.index_dir / C.EMBEDDINGS_DIR

    @cached_property
    def transcripts_dir(self) -> Path:
        return self.memory_dir / C.TRANSCRIPTS_DIR

    @property
    def cache_dir(self) -> Path:
        return self.memory_dir / C.CACHE_DIR

    @property
    def lock_file(self) -> Path:
        return self.memory_dir / C.LOCK_FILE

    @property
    def config_file(self) -> Path:
        return self.memory_dir / C.CONFIG_FILE

    @property
    def archive_dir(self) -> Path:
        return self.memory_dir / C.ARCHIVE_DIR

    @property
    def quarantine_dir(self) -> Path:
        return self.memory_dir / C.QUARANTINE_DIR

    def day_file(self, day: str) -> Path:
        return self.index_dir / f"{day}.json"

    def daily_log(self, day: str) -> Path:
        return self.memory_dir / f"{day}.md"

    def embedding_file(self, entry_id: str) -> Path:
        return self.embeddings_dir / f"{entry_id}.json"

    def transcript_file(self, entry_id: str) -> Path:
        return self.transcripts_dir / f"{entry_id}.md"

    def is_memory_root(self) -> bool:
        return self.memory_dir.is_dir()

    def require(self) -> "Layout":
        if not self.is_memory_root():
            raise NotAMemoryRoot(
                f"{self.root} is not a memory root (no {C.MEMORY_DIR}/ folder). "
                f"Run `memory init` there, or pass --root / set {C.ENV_ROOT}."
            )
        for folder in (self.index_dir, self.embeddings_dir, self.transcripts_dir):
            if os.path.lexists(folder) and not folder.is_dir():
                raise StoreCorrupt(f"{folder} is a file, not a folder: memtool keeps entries there. Move or rename it, then run `memory init` to recreate the folder.")
        return self

    def day_files(self) -> list[Path]:
        if not self.index_dir.is_dir():
            return []
        names = sorted(n for n in os.listdir(self.index_dir) if n.endswith(".json") and DAY_RE.match(n[:-5]))  # str sort: Paths sort slowly
        return [self.index_dir / n for n in names]

    def markdown_files(self) -> list[Path]:
        """Layer 3 files at the root and every Markdown file under memory/ (not transcripts, cache, archive,
        nor the generated entity pages of memory/areas, which repeat entries)."""
        out = [self.root / name for name in C.LAYER3_FILES if (self.root / name).is_file()]
        skip = {C.TRANSCRIPTS_DIR, C.CACHE_DIR, C.ARCHIVE_DIR, C.QUARANTINE_DIR, C.INDEX_DIR, C.AREAS_DIR}
        if self.memory_dir.is_dir():
            for dirpath, dirnames, filenames in os.walk(self.memory_dir):
                if Path(dirpath) == self.memory_dir:
                    dirnames[:] = [d for d in dirnames if d not in skip and not d.startswith(".")]
                base = Path(dirpath)
                out.extend(base / f for f in sorted(filenames) if f.endswith(".md") and not f.startswith("."))
        return out


def round6(values: np.ndarray) -> np.ndarray:
    """round(float(x), 6) for every x (any shape, as float64), vectorised: numpy rounds, and the rare
    values whose scaled fraction sits next to .5 (where x*1e6 may round the other way) go through round()."""
    v = np.asarray(values, dtype=np.float64)
    scaled = v * 1e6
    out = np.rint(scaled) / 1e6
    with np.errstate(invalid="ignore"):  # inf - inf: those go through round() below
        odd = (np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6) | ~np.isfinite(v) | (np.abs(v) >= 1e9)
    for i in zip(*np.nonzero(odd)):
        out[i] = round(float(v[i]), 6)
    return out


_DIGITS3 = np.array([list(f"{i:03d}".encode()) for i in range(1000)], np.uint8)  # "000" .. "999"
_SHORT3 = np.array([list(f"{i:03d}".rstrip("0").ljust(3, "\0").encode()) for i in range(1000)], np.uint8)  # "25\0", "\0\0\0"


def json_floats(values: np.ndarray, sep: str) -> list[str]:
    """sep.join(json.dumps(x) for x in round6(row)) for each row of a 2-D array, built with array
    operations (~2.5x faster than printing every float). A rounded value is k/1e6 and Python prints
    it with the digits of k, trailing zeros dropped: "0.25", "-0.000123", "0.0", "-0.0", and below
    1e-4 with an exponent: "5e-06", "1.2e-05". Each value gets a fixed-width cell whose unused bytes
    are NUL, dropped at the end; rows holding a value >= 1 (or inf, nan) go to json.dumps."""
    rounded = round6(np.atleast_2d(values))
    n, d = rounded.shape
    if not d:
        return [""] * n
    simple = (np.abs(rounded) < 1).all(axis=1)  # False for nan too
    r = np.where(simple[:, None], rounded, 0.0).ravel()
    k = np.rint(np.abs(r) * 1e6).astype(np.int64)
    hi, lo = np.divmod(k, 1000)
    cells = np.empty((k.size, 9 + len(sep)), np.uint8)  # "-0.dddddd" + sep
    cells[:, 0] = np.where(np.signbit(r), ord("-"), 0)
    cells[:, 1:3] = np.frombuffer(b"0.", np.uint8)
    cells[:, 3:6] = np.where((lo > 0)[:, None], _DIGITS3[hi], _SHORT3[hi])
    cells[:, 6:9] = _SHORT3[lo]
    cells[k == 0, 3] = ord("0")  # "0.0"
    tiny = np.flatnonzero((k > 0) & (k < 100))
    if tiny.size:
        kt = k[tiny]
        text = np.tile(np.frombuffer(b"0.0e-05\0", np.uint8), (tiny.size, 1))
        text[:, 0] = 48 + np.where(kt < 10, kt, kt // 10)
        text[:, 2] = 48 + np.where(kt < 10, 0, kt % 10)
        whole = text[:, 2] == ord("0")  # "7e-06", "1e-05": no decimal
        text[whole, 1:] = np.frombuffer(b"e-05\0\0\0", np.uint8)
        text[kt < 10, 4] = ord("6")
        cells[tiny, 1:9] = text
    cells[:, 9:] = np.frombuffer(sep.encode("ascii"), np.uint8)
    cells[d - 1 :: d, 9:] = 0
    cells[d - 1 :: d, 9] = ord("|")  # ends each row
    rows = cells.tobytes().translate(None, b"\0").decode("ascii").split("|")[:-1]
    for i in np.flatnonzero(~simple).tolist():
        rows[i] = sep.join(json.dumps(x) for x in rounded[i].tolist())
    return rows


def _file_sig(path: Path) -> list[int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return [st.st_size, st.st_mtime_ns]


def check_conflict_markers(path: Path, text: str) -> None:
    if "<<<<<<<" not in text and "=======" not in text and ">>>>>>>" not in text:
        return  # fast path: a substring test is ~5x cheaper than the multi-line regex on every file read
    m = CONFLICT_RE.search(text)
    if m:
        line = text.count("\n", 0, m.start()) + 1
        raise StoreCorrupt(f"{path}:{line}: git conflict markers. Run `memory reindex` (index.json) or resolve the conflict by hand.")


def load_json(path: Path, text: str | None = None) -> object:
    """The JSON in `path` (or in `text`, already read from it), with conflict markers and syntax
    errors reported as StoreCorrupt naming the line."""
    text = path.read_text(encoding="utf-8") if text is None else text
    check_conflict_markers(path, text)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreCorrupt(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON ({exc.msg})") from None
    except RecursionError:  # brackets nested thousands deep: no day file looks like that
        raise StoreCorrupt(f"{path}: JSON nested too deeply to read") from None


# Day files already parsed, by path: the (size, mtime_ns) each had when it was read, and its entries.
# One sync reads every changed day file once and hands this on (index.json, the search cache).
ParsedDays = dict[str, tuple[tuple[int, int], list[Entry]]]
DaySigs = dict[str, list[int]]  # day file name -> [size, mtime_ns]


def parse_day(path: Path, text: str) -> list[Entry]:
    data = load_json(path, text)
    items = data.get("entries") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise StoreCorrupt(f"{path}: expected {{\"date\": ..., \"entries\": [...]}}")
    return [Entry.from_dict(item, f"{path} entry {i + 1}") for i, item in enumerate(items)]


def read_day(path: Path, parsed: ParsedDays | None = None) -> list[Entry]:
    """The entries of a day file; those in `parsed` when the file's stat is still the one they were read at."""
    hit = parsed.get(str(path)) if parsed else None
    if hit is not None:
        try:
            st = path.stat()
        except FileNotFoundError:
            st = None
        if st is not None and (st.st_size, st.st_mtime_ns) == hit[0]:
            return hit[1]
    return parse_day(path, path.read_text(encoding="utf-8"))


def sort_entries(entries: Iterable[Entry]) -> list[Entry]:
    return sorted(entries, key=lambda e: (e.timestamp, e.id))


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
    head = json.dumps({"version": C.INDEX_VERSION, "provider": provider, "last_updated": iso(utcnow())}, indent=2, ensure_ascii=False)[:-2]
    body = [b"\n    ", *(p for i, run in enumerate(runs) for p in ((_INDEX_SEP, run) if i else (run,))), b"\n  "] if runs else []
    return [head.encode("utf-8"), _INDEX_OPEN, *body, b"]\n}\n"]


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


def _index_lines(data: bytes) -> list[bytes] | None:
    """The entry lines of an index.json of this version laid out as index_document writes it (one
    compact entry a line, valid UTF-8); None if it is anything else."""
    span = _index_span(data)
    if span is None:
        return None
    if not data.isascii():
        try:
            data.decode("utf-8")  # lines are copied as bytes: they must be text
        except UnicodeDecodeError:
            return None
    if span[0] == span[1]:
        return []
    lines = data.split(_INDEX_SEP)  # the whole file split once (no copy of its body): trim the first and last line
    lines[0], lines[-1] = lines[0][span[0] :], lines[-1][: span[1] - len(data)]
    return lines


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


def day_document(day: str, entries: Iterable[Entry]) -> str:
    return dumps_json({"date": day, "entries": [e.to_dict() for e in sort_entries(entries)]})


def id_day(entry_id: str) -> str | None:
    """The UTC day an id made by compress names (ctx-YYYYMMDD-...: its first home), or None."""
    m = ID_DAY_RE.match(entry_id)
    return "-".join(m.groups()) if m else None


@dataclass
class Found:
    """Where one entry is stored: the layout owning its files (live or an archive year) and its day file."""

    entry: Entry
    home: Layout
    day_file: Path


def locate(homes: list[Layout], ids: list[str], errors: list[str]) -> dict[str, list[Found]]:
    """Every place each id is stored under `homes`. The day files the ids name are read first, the
    others only for ids not found there (an entry a hand edit filed under another day). Each file is
    read once; unreadable ones go into `errors`."""
    found: dict[str, list[Found]] = {i: [] for i in ids}
    listed = [(home, home.day_files()) for home in homes]
    read: set[Path] = set()

    def scan(home: Layout, path: Path) -> None:
        read.add(path)
        try:
            entries = read_day(path)
        except (StoreCorrupt, UnicodeDecodeError) as exc:
            errors.append(str(exc))
            return
        for e in entries:
            if e.id in found:
                found[e.id].append(Found(e, home, path))

    named = {id_day(i) for i in ids} - {None}
    for home, paths in listed:
        for path in paths:
            if path.stem in named:
                scan(home, path)
    if any(not places for places in found.values()):
        for home, paths in listed:
            for path in paths:
                if path not in read:
                    scan(home, path)
    return found


class Store:
    """Reads and writes the versioned files. Writers hold the root's lock briefly."""

    def __init__(self, layout: Layout):
        self.layout = layout

    def lock(self):
        """The store's write lock. memory/ must be there: moved or deleted while a command runs, it
        is an error (NotAMemoryRoot), never an empty memory/ made again by the lock."""
        return locked(self.layout.lock_file, folder_must_exist=True)

    # -- entries ---------------------------------------------------------------------------------
    def iter_entries(self, errors: list[str] | None = None) -> Iterator[Entry]:
        """Every entry from the per-day files. A bad file raises, or is reported into `errors` and skipped."""
        for path in self.layout.day_files():
            try:
                yield from read_day(path)
            except (StoreCorrupt, UnicodeDecodeError) as exc:
                if errors is None:
                    raise
                errors.append(str(exc))

    def get(self, entry_id: str) -> Entry | None:
        day = id_day(entry_id)
        path = self.layout.day_file(day) if day else None
        if path is not None and path.is_file():
            for e in read_day(path):
                if e.id == entry_id:
                    return e
        return next((e for e in self.iter_entries() if e.id == entry_id), None)

    def update_entries(self, entries: list[Entry]) -> None:
        """Replace stored entries by id in the day file that holds each now: a hand edit may have changed
        its date or filed it under another day, and writing it by its date would leave two copies.
        Caller holds the lock."""
        found = locate([self.layout], [e.id for e in entries], [])
        new = {e.id: e for e in entries}
        for path in sorted({f.day_file for places in found.values() for f in places}):
            atomic_write_text(path, day_document(path.stem, [new.get(e.id, e) for e in read_day(path)]))
        self.write_entries([e for e in entries if not found[e.id]])

    def write_entries(self, entries: list[Entry]) -> None:
        """Add (or replace by id) entries in the day files of their dates. Caller holds the lock."""
        by_day: dict[str, list[Entry]] = {}
        for e in entries:
            by_day.setdefault(e.day, []).append(e)
        for day, new in by_day.items():
            path = self.layout.day_file(day)
            current = {e.id: e for e in read_day(path)} if path.is_file() else {}
            current.update({e.id: e for e in new})
            atomic_write_text(path, day_document(day, current.values()))

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
        of `days`: its lines for the other day files are copied, those of `days` replaced by the entries
        read now, when index.json is known to match every other day file (a record in the derived cache,
        taken at the last index write) and each line can be told apart. Anything else (a crash between
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
        rows = self._index_rows()
        if rows is None:
            return self.rebuild_index(provider, sigs=sigs)
        ids, bdays = {e.id.encode("utf-8") for e in fresh}, {d.encode("ascii") for d in days}
        kept = [r for r in rows if r[0][:10] not in bdays and r[1] not in ids]
        # a line of `days` whose entry is not there now was filed elsewhere (or removed by hand): rebuild
        if len(ids) != len(fresh) or any(r[0][:10] in bdays and r[1] not in ids for r in rows) or len({r[1] for r in kept}) != len(kept):
            return self.rebuild_index(provider, sigs=sigs)
        self._write_rows(provider, kept, fresh, sigs)
        return []

    def _splice_rows(self, provider: str, days: set[str], fresh: list[Entry], sigs: DaySigs) -> bool:
        """update_index's common cases without parsing every line: the lines of `days` are one run of
        index.json (for a session stored today, its end; for one dated yesterday, further in), found
        by bisecting the lines by timestamp; each of their entries is still there; and every fresh
        entry's timestamp and id name one of `days`. That run is replaced by the fresh entries and
        the lines before and after it are copied as runs of bytes: at 100,000 entries this skips
        matching 100,000 lines. False, writing nothing, in any other case. The caller has checked
        that index.json is the file written here last (indexed_days)."""
        if any(e.timestamp[:10] not in days or id_day(e.id) not in days for e in fresh):
            return False  # an entry filed under another day than its date: its line sorts elsewhere
        try:
            data = self.layout.index_file.read_bytes()
        except OSError:
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
                return False  # another day in between, or an entry of `days` left or filed elsewhere: update_index decides
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
        is laid out as index_document writes it and every line is recognised."""
        try:
            lines = _index_lines(self.layout.index_file.read_bytes())
        except OSError:
            return None
        rows = [(m.group(2), m.group(1), line) for line in lines or () if (m := _INDEX_LINE_RE.match(line)) and line.endswith(b"}")]
        return rows if lines is not None and len(rows) == len(lines) else None

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
        if state is None or state.get("index") != _file_sig(self.layout.index_file):
            return None
        days = state.get("days")
        return days if isinstance(days, dict) else None

    def _day_sigs(self) -> DaySigs:
        out: dict[str, list[int]] = {}
        if self.layout.index_dir.is_dir():
            with os.scandir(self.layout.index_dir) as it:
                for de in it:
                    if de.name.endswith(".json") and DAY_RE.match(de.name[:-5]):
                        st = de.stat()
                        out[de.name] = [st.st_size, st.st_mtime_ns]
        return out

    def _load_index_state(self) -> dict | None:
        try:
            state = json.loads((self.layout.cache_dir / C.INDEX_STATE_FILE).read_text())
            return state if isinstance(state, dict) else None
        except (OSError, ValueError):
            return None  # no record (first write, cache deleted): the full rebuild makes one

    def _save_index_state(self, sigs: DaySigs) -> None:
        """What index.json was built from: its own stat and every day file's (derived cache)."""
        state = {"index": _file_sig(self.layout.index_file), "days": sigs}
        atomic_write_text(self.layout.cache_dir / C.INDEX_STATE_FILE, json.dumps(state))

    # -- embeddings --------------------------------------------------------------------------------
    def write_embedding(self, entry: Entry, model: str, vector: np.ndarray) -> None:
        doc = {
            "id": entry.id,
            "model": model,
            "dim": int(vector.shape[0]),
            "content_hash": entry.content_hash(),
            "embedding": [round(float(x), 6) for x in vector],
        }
        write_json(self.layout.embedding_file(entry.id), doc)

    def write_embeddings(self, entries: list[Entry], model: str, vectors: np.ndarray) -> list[Path]:
        """write_embedding for a batch: the same bytes, files already identical left alone, fsyncs in
        parallel. Returns the paths written."""
        vectors = np.asarray(vectors)
        items = []
        model_json = json.dumps(model, ensure_ascii=False)
        for entry, floats in zip(entries, json_floats(vectors, ",\n    ")):
            head = f'{{\n  "id": {json.dumps(entry.id, ensure_ascii=False)},\n  "model": {model_json},\n  "dim": {vectors.shape[1]},\n  '
            body = "[\n    " + floats + "\n  ]" if floats else "[]"
            text = f'{head}"content_hash": "{entry.content_hash()}",\n  "embedding": {body}\n}}\n'
            items.append((self.layout.embedding_file(entry.id), text.encode("utf-8")))
        return atomic_write_many(items)

    def read_embedding(self, entry_id: str) -> dict | None:
        path = self.layout.embedding_file(entry_id)
        if not path.is_file():
            return None
        data = load_json(path)
        if not isinstance(data, dict) or not isinstance(data.get("embedding"), list):
            raise StoreCorrupt(f"{path}: expected an object with an 'embedding' list")
        return data

    def vector_for(self, entry: Entry, model: str, dim: int) -> np.ndarray | None:
        """The stored vector if it is current for this model; None if it must be (re)computed (also when
        the file is damaged: `memory doctor` reports it, and a sync or `doctor --fix` writes it anew)."""
        try:
            data = self.read_embedding(entry.id)
        except StoreCorrupt:
            return None
        if data is None or data.get("content_hash") != entry.content_hash():
            return None
        if data.get("model") != model:
            raise DimensionMismatch(
                f"entry {entry.id} was embedded with '{data.get('model')}' ({data.get('dim')} dims) but the "
                f"configured embedder is '{model}' ({dim} dims). Run `memory reembed` to re-embed the store."
            )
        vec = np.asarray(data["embedding"], dtype=np.float32)
        if vec.shape != (dim,):
            raise DimensionMismatch(f"{self.layout.embedding_file(entry.id)}: {vec.shape[0]} dims, expected {dim}. Run `memory reembed`.")
        return vec

    # -- transcripts and logs ----------------------------------------------------------------------
    def write_transcript(self, entry_id: str, text: str) -> None:
        self.write_transcripts([(entry_id, text)])

    def write_transcripts(self, items: list[tuple[str, str]]) -> list[Path]:
        """Kept transcripts for a batch of entries, written together (fsyncs in parallel)."""
        return atomic_write_many(
            [(self.layout.transcript_file(i), (t if t.endswith("\n") else t + "\n").encode("utf-8")) for i, t in items]
        )

    def append_log(self, day: str, line: str) -> Path:
        path = self.layout.daily_log(day)
        if not path.exists():
            append_text(path, f"# {day}\n")
        append_text(path, line)
        return path
