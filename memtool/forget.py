"""`memory forget ID...`: remove entries for good (a wrong memory, or a secret the redaction missed).

An entry lives in its day file (memory/index/YYYY-MM-DD.json, or memory/archive/YYYY/index/... once
archived) with its transcript and its embedding beside it; index.json, the generated entity pages and
the derived caches hold copies of its text. Under the root's lock, forget first writes a journal
(memory/.cache/forget-journal.json, atomically: the ids, and the cache keys of their transcript's
passages), then removes the transcript and the embedding, then the entry from its day file, then
rewrites index.json, rewrites the entity pages that named it, deletes everything the cache
(memtool/search/build.py) holds of it (`purge_caches`), and removes the journal. A crash part-way leaves the journal: the next `memory
forget` (any ids, the same ones included) or `memory doctor --fix` completes it first, and an id the
interrupted run already removed counts as forgotten, not as unknown.

What forget does not change, it names: lines of Markdown files you write (MEMORY.md after
`memory promote`, daily logs) that mention a forgotten id. Git history keeps old versions of files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from memtool import confine
from memtool import constants as C
from memtool.chunking import chunk_lines
from memtool.dayfile import day_document, id_day, read_day
from memtool.errors import BadInput, NotFound, UnsafePath
from memtool.fsutil import atomic_write_text
from memtool.index_json import write_index
from memtool.models import ID_RE, Entry, iso, utcnow
from memtool.session_vectors import chunk_key
from memtool.store import Found, Layout, Store, archive_layouts, locate
from memtool.tombstones import add_tombstones, read_tombstones

JOURNAL_FILE = "forget-journal.json"  # memory/.cache/: what an unfinished forget still has to remove


@dataclass
class ForgetReport:
    dry_run: bool
    entries: list[dict] = field(default_factory=list)  # id, timestamp, summary, trusted, archived
    completed: list[str] = field(default_factory=list)  # ids an interrupted forget had already removed; finished now
    removed: list[str] = field(default_factory=list)  # files removed, relative to the root
    rewritten: list[str] = field(default_factory=list)  # files rewritten without the entries
    caches: list[str] = field(default_factory=list)  # derived caches dropped or purged of the entries
    mentions: list[str] = field(default_factory=list)  # "MEMORY.md:12: ..." lines still naming an id


def journal_file(layout: Layout) -> Path:
    return layout.cache_dir / JOURNAL_FILE


def read_journal(layout: Layout) -> tuple[list[str], list[str]]:
    """(ids, vector keys) an interrupted forget still has to remove; empty when none is pending. A
    journal that cannot be read names no ids (its ids are then found, if still stored, by the ids given)."""
    try:
        data = json.loads(confine.read_text(journal_file(layout)))
        ids = [i for i in data.get("ids", []) if isinstance(i, str) and ID_RE.fullmatch(i)]
        keys = [k for k in data.get("keys", []) if isinstance(k, str)]
    except (OSError, UnsafePath, ValueError, AttributeError):
        return [], []
    return ids, keys


def forget(layout: Layout, ids: list[str], provider: str, dry_run: bool = False) -> ForgetReport:
    """Remove these entries (live or archived) and every copy memtool keeps of them. Every id must
    name an entry (or one an interrupted forget was removing, which this run completes first), else
    nothing changes. `provider`: the compressor named in index.json."""
    ids = list(dict.fromkeys(ids))
    bad = [i for i in ids if not ID_RE.fullmatch(i)]
    if bad:
        raise BadInput(f"{bad[0]!r:.60} is not an entry id (like ctx-20260207-1a2b3c4d). `memory search` lists ids.")
    store = Store(layout)
    with store.lock():
        return _forget_locked(layout, store, ids, provider, dry_run)


def finish_interrupted(layout: Layout, provider: str) -> ForgetReport | None:
    """Complete a forget a crash interrupted (the journal names it), under the root's lock; None when
    none is pending."""
    store = Store(layout)
    with store.lock():
        _drop_journal_temps(layout)
        if not journal_file(layout).exists():
            return None
        return _forget_locked(layout, store, [], provider, dry_run=False)


def _drop_journal_temps(layout: Layout) -> None:
    """Temp files of a journal whose write was cut off (they name ids). Caller holds the lock."""
    for tmp in journal_file(layout).parent.glob(f".{JOURNAL_FILE}.*.tmp"):
        tmp.unlink(missing_ok=True)


def _forget_locked(layout: Layout, store: Store, ids: list[str], provider: str, dry_run: bool) -> ForgetReport:
    report = ForgetReport(dry_run=dry_run)
    journaled, journal_keys = read_journal(layout)
    every = list(dict.fromkeys([*ids, *journaled]))
    homes = [layout, *archive_layouts(layout)]
    errors: list[str] = []
    found = locate(homes, every, errors)
    leftovers = {i: [p for h in homes for p in h.entry_files(i) if p.is_file()] for i in every}
    missing = [i for i in ids if not found[i] and i not in journaled and not leftovers[i]]
    if missing:
        unread = f" ({len(errors)} day file(s) could not be read: `memory doctor` names them)" if errors else ""
        raise NotFound(f"no entry with id {', '.join(missing)}{unread}; nothing was forgotten. `memory search --archive` lists ids.")
    files = sorted({p for ps in leftovers.values() for p in ps})
    day_files = sorted({f.day_file for fs in found.values() for f in fs})  # each lists every id of `every` it holds (locate)
    index_text = _text(layout.index_file)
    listed = any(i in index_text for i in every)  # index.json names one: it is rebuilt
    gone = set(every)
    pages = _pages_naming(layout, gone)
    page_entries = _entries_for_pages(store, gone) if pages else None
    report.entries = [_described(layout, fs) for fs in found.values() if fs]
    report.completed = [i for i in every if not found[i]]
    report.removed = [layout.rel(p) for p in files]
    report.rewritten = [layout.rel(p) for p in day_files] + [layout.rel(layout.index_file)] * listed
    report.rewritten += [layout.rel(p) for p in pages] if page_entries is not None else []
    report.mentions = _mentions(layout, gone, [] if page_entries is not None else pages)
    passages = (c for p in files if p.suffix == ".md" for c in chunk_lines(_text(p)))  # a kept transcript's, as the search cache keys their vectors
    keys = list(dict.fromkeys([*journal_keys, *(chunk_key(c.text) for c in passages)]))
    if dry_run:
        report.caches = purge_caches(layout, gone, set(keys), dry_run=True)
        return report
    add_tombstones(layout.root, every)  # first: a merge with an older copy, or a crash here, never brings them back
    _drop_journal_temps(layout)
    atomic_write_text(journal_file(layout), json.dumps({"ids": every, "keys": keys, "started": iso(utcnow())}))
    for path in files:  # the copies first: without the journal, a crash then leaves an entry without them, never them without it
        path.unlink(missing_ok=True)
    for path in day_files:
        staying = [e for e in read_day(path) if e.id not in gone]
        if staying or path.parent == layout.index_dir:  # a live day kept empty: a clone adding to it then merges (no modify/delete conflict)
            atomic_write_text(path, day_document(path.stem, staying))
        else:
            path.unlink()
    if listed and write_index(store.layout, provider).not_written:
        layout.index_file.unlink(missing_ok=True)  # it lists them: derived, and written again by the next write or `memory reindex`
    if page_entries is not None:
        from memtool.entities import collect_entities, write_pages

        write_pages(layout, collect_entities(page_entries))
    report.caches = purge_caches(layout, gone, set(keys))
    journal_file(layout).unlink()
    return report


def purge_caches(layout: Layout, ids: set[str], keys: set[str], dry_run: bool = False) -> list[str]:
    """Remove every copy of these entries from the cache under memory/.cache: their records
    in the sync manifest (the day files naming them are hashed again), then, in one transaction, their
    documents, postings and vectors (and the vectors of their passages, `keys`), their use counts and
    the compressor's word counts (memtool.search.build.purge_entries). Returns what it touched (with
    `dry_run`, would touch), relative to the root."""
    from memtool.cache import cache_path
    from memtool.config import load_settings
    from memtool.search.backends import PostgresCache, derived_cache
    from memtool.search.build import purge_entries
    from memtool.sync_scan import Manifest

    shared = derived_cache(load_settings(layout.root).cache, layout)
    if isinstance(shared, PostgresCache) and not dry_run:  # the team's cache: their rows go there (a local store, if any, below)
        shared.purge_entries(layout, sorted(ids), sorted(keys))
    store = cache_path(layout)
    if not store.is_file():
        return []
    if not dry_run:
        Manifest.drop(layout, ids)
        purge_entries(layout, sorted(ids), sorted(keys))
    return [layout.rel(store)]


def _entries_for_pages(store: Store, gone: set[str]) -> list[Entry] | None:
    """The live entries the entity pages are rewritten from, or None when a day file is unreadable
    (rewriting then would drop the pages of the entities it names)."""
    errors: list[str] = []
    entries = [e for e in store.iter_entries(errors) if e.id not in gone]
    return None if errors else entries


def _described(layout: Layout, places: list[Found]) -> dict:
    e = places[0].entry
    return {"id": e.id, "timestamp": e.timestamp, "summary": e.summary, "trusted": e.trusted, "archived": all(f.home is not layout for f in places)}


def _pages_naming(layout: Layout, ids: set[str]) -> list[Path]:
    """Generated entity pages (memory/areas/) that name one of these entries (as `id`)."""
    return [p for p in sorted((layout.memory_dir / C.AREAS_DIR).rglob("*.md")) if any(f"`{i}`" in _text(p) for i in ids)]


def _mentions(layout: Layout, ids: set[str], extra: list[Path]) -> list[str]:
    """Lines naming an id in the Markdown files people write (Layer 3, daily logs, archived logs) and
    in `extra` files left as they are; files `memory doctor` set aside in memory/quarantine/."""
    files = [*layout.markdown_files(), *(p for a in archive_layouts(layout) for p in a.markdown_files()), *extra]
    out: list[str] = []
    for path in files:
        for n, line in enumerate(_text(path).splitlines(), 1):
            if any(i in line for i in ids):
                out.append(f"{layout.rel(path)}:{n}: {line.strip()[:120]}")
    quarantined = sorted(p for p in layout.quarantine_dir.rglob("*") if p.is_file())  # a missing folder yields nothing
    out += [f"{layout.rel(p)}: a copy `memory doctor` set aside" for p in quarantined if any(i in _text(p) for i in ids)]
    return out


def _text(path: Path) -> str:
    """A file's text as forget reads it (memtool/confine.py: no link out of the root, no FIFO, capped);
    "" when it cannot be read, so a file someone planted never stops or blocks a forget."""
    try:
        return confine.read_text(path, errors="replace")
    except (OSError, UnsafePath):
        return ""


def bury(layout, provider: str) -> list[str]:
    """Remove what a merge brought back of tombstoned entries, through `memory forget`: the entries
    (live or archived, found in the day files their ids name) and stray transcript or embedding
    files (forget removes those of an id no day file holds). Returns the ids removed. Takes the
    root's lock (not to be held by the caller)."""
    dead = read_tombstones(layout.root)
    if not dead:
        return []
    homes = [layout, *archive_layouts(layout)]

    @cache  # each day file read once
    def text(path) -> str:
        return confine.read_text(path, errors="replace") if confine.is_regular(path) else ""

    stored = {i for i in dead if (day := id_day(i)) and any(f'"{i}"' in text(home.day_file(day)) for home in homes)}
    strays = {i for i in dead for home in homes if any(p.is_file() for p in home.entry_files(i))}
    if stored or strays:
        forget(layout, sorted(stored | strays), provider)
    return sorted(stored | strays)


__all__ = ["ForgetReport", "bury", "finish_interrupted", "forget", "purge_caches", "read_journal"]
