"""Day files (memory/index/YYYY-MM-DD.json), the source of truth for Layer 2: reading them (git
conflict markers and bad JSON reported by line), and writing one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable

from memtool import confine
from memtool import constants as C
from memtool.errors import StoreCorrupt, UnsafePath
from memtool.fsutil import FileSig, dumps_json, stat_sig
from memtool.models import Entry

DAY_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
ID_DAY_RE = re.compile(rf"^{C.ENTRY_ID_PREFIX}-(\d{{4}})(\d{{2}})(\d{{2}})-")  # ids made by compress name their UTC day
CONFLICT_RE = re.compile(r"^(<{7}|={7}|>{7})( |$)", re.M)


def read_store_text(path: Path) -> str:
    """A JSON file of the store, opened by confine (no link, no FIFO, capped): one that is not a
    regular file inside the root is StoreCorrupt naming why, which every reader reports and skips."""
    try:
        return confine.read_text(path)
    except UnsafePath as exc:
        raise StoreCorrupt(str(exc)) from None


def conflict_line(text: str) -> int:
    """The line of the first git conflict marker in `text`; 0 when there is none."""
    if "<<<<<<<" not in text and "=======" not in text and ">>>>>>>" not in text:
        return 0  # fast path: a substring test is ~5x cheaper than the multi-line regex on every file read
    m = CONFLICT_RE.search(text)
    return text.count("\n", 0, m.start()) + 1 if m else 0


def load_json(path: Path, text: str | None = None) -> Any:
    """The JSON in `path` (or in `text`, already read from it), with conflict markers and syntax
    errors reported as StoreCorrupt naming the line."""
    text = read_store_text(path) if text is None else text
    if line := conflict_line(text):
        raise StoreCorrupt(f"{path}:{line}: git conflict markers. Run `memory reindex` (index.json) or resolve the conflict by hand.")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreCorrupt(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON ({exc.msg})") from None
    except RecursionError:  # brackets nested thousands deep: no day file looks like that
        raise StoreCorrupt(f"{path}: JSON nested too deeply to read") from None


# Day files already parsed, by path: the (size, mtime_ns) each had when it was read, and its entries.
# One sync reads every changed day file once and hands this on (index.json, the search cache).
ParsedDays = dict[str, tuple[FileSig | None, list[Entry]]]


def parse_day(path: Path, text: str) -> list[Entry]:
    data = load_json(path, text)
    items = data.get("entries") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise StoreCorrupt(f'{path}: expected {{"date": ..., "entries": [...]}}')
    return [Entry.from_dict(item, f"{path} entry {i + 1}") for i, item in enumerate(items)]


def read_day(path: Path, parsed: ParsedDays | None = None) -> list[Entry]:
    """The entries of a day file; those in `parsed` when the file's stat is still the one they were read at."""
    hit = parsed.get(str(path)) if parsed else None
    if hit is not None and stat_sig(path) == hit[0]:
        return hit[1]
    return parse_day(path, read_store_text(path))


def sort_entries(entries: Iterable[Entry]) -> list[Entry]:
    return sorted(entries, key=lambda e: (e.timestamp, e.id))


def day_document(day: str, entries: Iterable[Entry]) -> str:
    return dumps_json({"date": day, "entries": [e.to_dict() for e in sort_entries(entries)]})


def id_day(entry_id: str) -> str | None:
    """The UTC day an id made by compress names (ctx-YYYYMMDD-...: its first home), or None."""
    m = ID_DAY_RE.match(entry_id)
    return "-".join(m.groups()) if m else None
