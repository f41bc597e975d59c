"""`memory forget ID...`: remove entries for good (a wrong memory, or a secret the redaction missed).

An entry lives in its day file (memory/index/YYYY-MM-DD.json, or memory/archive/YYYY/index/... once
archived) with its transcript and its embedding beside it; index.json, the generated entity pages and
the derived caches hold copies of its text. Under the root's lock, forget removes the transcript and
the embedding, then the entry from its day file, then rewrites index.json, rewrites the entity pages
that named it, deletes their documents and vectors from the derived store (memtool/search/store.py)
and drops the compressor's word counts (rebuilt from the files on next use). A crash part-way leaves an entry without its transcript
or vector, a state the store already knows (`--no-transcript`, a pending embedding); forget run again
finishes the job.

What forget does not change, it names: lines of Markdown files you write (MEMORY.md after
`memory promote`, daily logs) that mention a forgotten id. Git history keeps old versions of files.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from memtool import constants as C
from memtool.archive import archive_layouts
from memtool.dayfile import day_document, read_day
from memtool.errors import BadInput, NotFound
from memtool.fsutil import atomic_write_text
from memtool.models import ID_RE, Entry
from memtool.store import Layout, Store, locate

TEXT_CACHES = (C.STORE_FILE, C.DOC_FREQ_FILE)  # under memory/.cache: they hold entry text


@dataclass
class ForgetReport:
    dry_run: bool
    entries: list[dict] = field(default_factory=list)  # id, timestamp, summary, archived
    removed: list[str] = field(default_factory=list)  # files removed, relative to the root
    rewritten: list[str] = field(default_factory=list)  # files rewritten without the entries
    caches: list[str] = field(default_factory=list)  # derived caches dropped
    mentions: list[str] = field(default_factory=list)  # "MEMORY.md:12: ..." lines still naming an id

    def to_dict(self) -> dict:
        return asdict(self)


def forget(layout: Layout, ids: list[str], provider: str, dry_run: bool = False) -> ForgetReport:
    """Remove these entries (live or archived) and every copy memtool keeps of them. Every id must
    name an entry, else nothing changes. `provider`: the compressor named in index.json."""
    ids = list(dict.fromkeys(ids))
    bad = [i for i in ids if not ID_RE.fullmatch(i)]
    if bad:
        raise BadInput(f"{bad[0]!r:.60} is not an entry id (like ctx-20260207-1a2b3c4d). `memory search` lists ids.")
    store = Store(layout)
    report = ForgetReport(dry_run=dry_run)
    with store.lock():
        errors: list[str] = []
        found = locate([layout, *archive_layouts(layout)], ids, errors)
        missing = [i for i, places in found.items() if not places]
        if missing:
            unread = f" ({len(errors)} day file(s) could not be read: `memory doctor` names them)" if errors else ""
            raise NotFound(f"no entry with id {', '.join(missing)}{unread}; nothing was forgotten. `memory search --archive` lists ids.")
        places = [f for fs in found.values() for f in fs]
        homes = [layout, *{f.home for f in places if f.home is not layout}]  # a file can be left in either
        files = sorted({p for i in found for h in homes for p in (h.transcript_file(i), h.embedding_file(i)) if p.is_file()})
        by_day: dict[Path, set[str]] = {}
        for f in places:
            by_day.setdefault(f.day_file, set()).add(f.entry.id)
        live = any(f.home is layout for f in places)
        pages = _pages_naming(layout, set(ids))
        page_entries = _entries_for_pages(store, set(ids)) if pages else None
        report.entries = [{"id": i, "timestamp": fs[0].entry.timestamp, "summary": fs[0].entry.summary, "archived": all(f.home is not layout for f in fs)} for i, fs in found.items()]
        report.removed = [_rel(layout, p) for p in files]
        report.rewritten = [_rel(layout, p) for p in sorted(by_day)] + [_rel(layout, layout.index_file)] * live
        report.rewritten += [_rel(layout, p) for p in pages] if page_entries is not None else []
        report.caches = [_rel(layout, layout.cache_dir / name) for name in TEXT_CACHES if (layout.cache_dir / name).exists()]
        report.mentions = _mentions(layout, set(ids), [] if page_entries is not None else pages)
        if dry_run:
            return report
        for path in files:  # the copies first: a crash then leaves an entry without them, never them without it
            path.unlink(missing_ok=True)
        for path, gone in sorted(by_day.items()):
            staying = [e for e in read_day(path) if e.id not in gone]
            if staying:
                atomic_write_text(path, day_document(path.stem, staying))
            else:
                path.unlink()
        if live:
            store.rebuild_index(provider)
        if page_entries is not None:
            from memtool.entities import collect_entities, write_pages

            write_pages(layout, collect_entities(page_entries))
        from memtool.search.store import purge_entries

        purge_entries(layout, ids)  # the derived store: their documents and vectors deleted, in one transaction
        (layout.cache_dir / C.DOC_FREQ_FILE).unlink(missing_ok=True)
    return report


def _entries_for_pages(store: Store, gone: set[str]) -> list[Entry] | None:
    """The live entries the entity pages are rewritten from, or None when a day file is unreadable
    (rewriting then would drop the pages of the entities it names)."""
    errors: list[str] = []
    entries = [e for e in store.iter_entries(errors) if e.id not in gone]
    return None if errors else entries


def _rel(layout: Layout, path: Path) -> str:
    return path.relative_to(layout.root).as_posix()


def _pages_naming(layout: Layout, ids: set[str]) -> list[Path]:
    """Generated entity pages (memory/areas/) that name one of these entries (as `id`)."""
    folder = layout.memory_dir / C.AREAS_DIR
    pages = sorted(folder.rglob("*.md")) if folder.is_dir() else []
    return [p for p in pages if any(f"`{i}`" in p.read_text(encoding="utf-8", errors="replace") for i in ids)]


def _mentions(layout: Layout, ids: set[str], extra: list[Path]) -> list[str]:
    """Lines naming an id in the Markdown files people write (Layer 3, daily logs, archived logs) and
    in `extra` files left as they are; files `memory doctor` set aside in memory/quarantine/."""
    files = [*layout.markdown_files(), *(p for a in archive_layouts(layout) for p in a.markdown_files()), *extra]
    out: list[str] = []
    for path in files:
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if any(i in line for i in ids):
                out.append(f"{_rel(layout, path)}:{n}: {line.strip()[:120]}")
    quarantined = sorted(p for p in layout.quarantine_dir.rglob("*") if p.is_file()) if layout.quarantine_dir.is_dir() else []
    out += [f"{_rel(layout, p)}: a copy `memory doctor` set aside" for p in quarantined if any(i.encode() in p.read_bytes() for i in ids)]
    return out


__all__ = ["ForgetReport", "forget"]
