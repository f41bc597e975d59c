"""People, systems, dates and topics seen across entries: counts, first/last seen, timelines.

Names are grouped case-insensitively (with runs of white space collapsed); the spelling shown is
the one used most often (the earliest on a tie). `write_pages` renders seed 003's pattern 3 as
Markdown a person can browse: memory/areas/{people,systems}/<slug>/summary.md and an index.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from memtool import constants as C
from memtool.dayfile import sort_entries
from memtool.errors import BadInput, NotFound, WouldOverwrite
from memtool.fsutil import atomic_write_many
from memtool.models import Entry
from memtool.quoting import inline_code, no_headings
from memtool.store import Layout


@dataclass
class Entity:
    kind: str  # one of C.ENTITY_KINDS
    key: str  # case-folded name: the identity
    entries: list[Entry] = field(default_factory=list)  # entries mentioning it, oldest first
    spellings: Counter = field(default_factory=Counter)  # spelling -> entries using it

    @property
    def name(self) -> str:
        """The most used spelling; the earliest one on a tie (spellings are counted in entry order)."""
        return max(self.spellings, key=self.spellings.__getitem__)  # max keeps the first of equals

    @property
    def count(self) -> int:
        return len(self.entries)

    @property
    def first_seen(self) -> str:
        return self.entries[0].day

    @property
    def last_seen(self) -> str:
        return self.entries[-1].day

    def summary_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "count": self.count, "first_seen": self.first_seen, "last_seen": self.last_seen}


def normalize(name: str) -> str:
    return " ".join(name.split()).casefold()


def slugify(name: str) -> str:
    """A folder name for a page: lower-case words joined by '-' ('Node.js' -> 'node-js')."""
    slug = re.sub(r"[^\w]+", "-", normalize(name)).strip("-_")
    return slug[: C.ENTITY_SLUG_MAX] or "entity"


def collect_entities(entries: Iterable[Entry], kinds: Iterable[str] = C.ENTITY_KINDS) -> dict[str, list[Entity]]:
    """For each kind, its entities sorted by mentions (most first), then most recent, then name."""
    by_kind: dict[str, dict[str, Entity]] = {k: {} for k in kinds}
    for entry in sort_entries(entries):
        for kind, found in by_kind.items():
            names = entry.topics if kind == "topics" else getattr(entry.entities, kind)
            for spelling in dict.fromkeys(" ".join(raw.split()) for raw in names):  # once per entry
                key = normalize(spelling)
                if not key:
                    continue
                ent = found.setdefault(key, Entity(kind, key))
                ent.spellings[spelling] += 1
                if not ent.entries or ent.entries[-1] is not entry:  # two spellings of one name: the entry counts once
                    ent.entries.append(entry)
    by_name = {kind: sorted(found.values(), key=lambda e: e.key) for kind, found in by_kind.items()}
    return {kind: sorted(ents, key=lambda e: (e.count, e.last_seen), reverse=True) for kind, ents in by_name.items()}  # a stable sort


def check_kind(kind: str | None) -> tuple[str, ...]:
    if kind is None:
        return C.ENTITY_KINDS
    if kind not in C.ENTITY_KINDS:
        raise BadInput(f"--kind must be one of {', '.join(C.ENTITY_KINDS)}, got {kind!r}")
    return (kind,)


# (JSON key, Entry attribute) of one item of `memory entity NAME --json`'s timeline, in order
TIMELINE_FIELDS = (("date", "day"), ("timestamp", "timestamp"), ("id", "id"), ("session", "source_session"))
TIMELINE_FIELDS += (("importance", "importance"), ("summary", "summary"), ("decisions", "decisions"))


@dataclass
class Timeline:
    name: str
    matches: list[Entity]  # one per kind the name is known as

    @property
    def kinds(self) -> list[str]:
        return [m.kind for m in self.matches]

    @property
    def entries(self) -> list[Entry]:
        return sort_entries({e.id: e for m in self.matches for e in m.entries}.values())

    def to_dict(self) -> dict:
        entries = self.entries
        return {
            "name": self.name,
            "kinds": self.kinds,
            "count": len(entries),
            "first_seen": entries[0].day,
            "last_seen": entries[-1].day,
            "timeline": [{key: getattr(e, attr) for key, attr in TIMELINE_FIELDS} for e in entries],
        }


def timeline(found: dict[str, list[Entity]], name: str) -> Timeline:
    """The entities called `name` (any case, or its page slug), or NotFound with close matches."""
    key = normalize(name)
    if not key:
        raise BadInput("give a name: `memory entity NAME`")
    matches = [e for ents in found.values() for e in ents if e.key == key] or [e for ents in found.values() for e in ents if slugify(e.name) == key]
    if matches:
        return Timeline(matches[0].name, matches)
    names = {e.key: e.name for ents in found.values() for e in ents}
    close = difflib.get_close_matches(key, list(names), n=C.ENTITY_SUGGESTIONS, cutoff=C.ENTITY_SUGGEST_CUTOFF)
    close += [k for k in sorted(names) if key in k.split() and k not in close]  # "smith" -> "Alice Smith"
    hint = f" Did you mean: {', '.join(names[k] for k in close[: C.ENTITY_SUGGESTIONS])}?" if close else ""
    raise NotFound(f"no person, system, date or topic called {name!r} in any entry.{hint} `memory entities` lists them.")


# -- Markdown pages (seed 003, pattern 3) ------------------------------------------------------------
KIND_LABEL = {"people": "Person", "systems": "System"}


@dataclass
class PagesReport:
    written: list[str] = field(default_factory=list)  # root-relative paths created or changed
    removed: list[str] = field(default_factory=list)  # generated pages of entities no longer seen
    unchanged: int = 0


def page_slugs(found: dict[str, list[Entity]]) -> dict[tuple[str, str], str]:
    """(kind, key) -> folder name, unique per kind: a clash ('C++' and 'C#' are both 'c') gets -2, -3..."""
    out: dict[tuple[str, str], str] = {}
    for kind in C.ENTITY_PAGE_KINDS:
        taken: set[str] = set()
        for ent in sorted(found.get(kind, []), key=lambda e: e.key):
            base = slugify(ent.name)
            slug = next(s for s in itertools.chain([base], (f"{base}-{n}" for n in itertools.count(2))) if s not in taken)
            taken.add(slug)
            out[(kind, ent.key)] = slug
    return out


def _link_text(text: str) -> str:
    """A name as Markdown link text, also inside a table cell: brackets, pipes and backslashes escaped."""
    return re.sub(r"([\\\[\]|])", r"\\\1", " ".join(text.split()))


def render_pages(found: dict[str, list[Entity]]) -> dict[str, str]:
    """Root-relative path -> page text, for every person and system, and the index. Deterministic."""
    slugs = page_slugs(found)
    area = f"{C.MEMORY_DIR}/{C.AREAS_DIR}"
    paged = [ent for kind in C.ENTITY_PAGE_KINDS for ent in found.get(kind, [])]
    named: dict[str, list[Entity]] = {}  # entry id -> the people and systems it names
    for ent in paged:
        for e in ent.entries:
            named.setdefault(e.id, []).append(ent)
    pages = {f"{area}/{ent.kind}/{slugs[(ent.kind, ent.key)]}/{C.AREA_PAGE_FILE}": _page(ent, named, slugs) for ent in paged}
    pages[f"{area}/{C.AREA_INDEX_FILE}"] = _index(found, slugs)
    return pages


def _index(found: dict[str, list[Entity]], slugs: dict[tuple[str, str], str]) -> str:
    entries = {e.id: e for kind in C.ENTITY_PAGE_KINDS for ent in found.get(kind, []) for e in ent.entries}
    days = sorted(e.day for e in entries.values())
    lines = [C.GENERATED_MARK, "# Areas", ""]
    span = f", {days[0]} to {days[-1]}" if days else ""
    lines += [f"People and systems named in {len(entries)} entries{span}. Regenerate with `memory entities --pages`.", ""]
    for kind in C.ENTITY_PAGE_KINDS:
        ents = found.get(kind, [])
        lines += [f"## {kind.capitalize()} ({len(ents)})", ""]
        if not ents:
            lines += ["None yet.", ""]
            continue
        lines += ["| Name | Entries | First seen | Last seen |", "|---|---:|---|---|"]
        for e in ents:
            lines.append(f"| [{_link_text(e.name)}]({kind}/{slugs[(kind, e.key)]}/{C.AREA_PAGE_FILE}) | {e.count} | {e.first_seen} | {e.last_seen} |")
        lines.append("")
    return "\n".join(lines)


def _page(ent: Entity, named: dict[str, list[Entity]], slugs: dict[tuple[str, str], str]) -> str:
    lines = [C.GENERATED_MARK, f"# {ent.name}", ""]
    lines += [f"{KIND_LABEL[ent.kind]} · {ent.count} {'entry' if ent.count == 1 else 'entries'} · first seen {ent.first_seen} · last seen {ent.last_seen}", ""]
    others = sorted(s for s in ent.spellings if s != ent.name)
    if others:
        lines += [f"Also written: {', '.join(others)}", ""]
    lines += ["[All people and systems](../../README.md)", ""]
    together = Counter((o.kind, o.key) for e in ent.entries for o in named[e.id] if o is not ent)
    by_key = {(o.kind, o.key): o for e in ent.entries for o in named[e.id]}
    related = [(n, by_key[k]) for k, n in sorted(together.items(), key=lambda t: (-t[1], t[0][1], t[0][0]))][: C.ENTITY_RELATED_MAX]
    if related:
        lines += ["## Seen with", ""]
        lines += [f"- [{_link_text(o.name)}](../../{o.kind}/{slugs[(o.kind, o.key)]}/{C.AREA_PAGE_FILE}) ({n})" for n, o in related]
        lines.append("")
    topics = Counter(normalize(t) for e in ent.entries for t in set(e.topics))
    if topics:
        lines += ["## Topics", "", ", ".join(f"{t} ({n})" for t, n in sorted(topics.items(), key=lambda t: (-t[1], t[0]))), ""]
    lines += ["## Timeline", ""]
    for e in reversed(ent.entries):  # newest first: what a person opening the page wants to see
        lines += [f"### {e.day} · session {inline_code(e.source_session)} · {e.importance}", "", no_headings(" ".join(e.summary.split())), ""]
        lines += [f"- Decision: {' '.join(d.split())}" for d in e.decisions]
        lines += [f"- Action: {' '.join(a.split())}" for a in e.action_items]
        lines += ["", f"`{e.id}`", ""] if e.decisions or e.action_items else [f"`{e.id}`", ""]
    return "\n".join(lines)


def _generated(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.readline().rstrip(b"\r\n") == C.GENERATED_MARK.encode()


def write_pages(layout: Layout, found: dict[str, list[Entity]]) -> PagesReport:
    """Write the pages whose bytes changed and remove generated pages of entities no longer seen.
    A file at a page's path without the generated mark is a person's: nothing is written then."""
    pages = {layout.root / rel: text.encode("utf-8") for rel, text in render_pages(found).items()}
    report = PagesReport()
    todo: list[tuple[Path, bytes]] = []
    mine: list[str] = []
    for path, data in pages.items():
        there = path.is_file()
        if there and path.read_bytes() == data:
            report.unchanged += 1
        elif not there or _generated(path):
            todo.append((path, data))
        else:
            mine.append(layout.rel(path))
    if mine:
        raise WouldOverwrite(
            f"{len(mine)} file(s) where a page would go were not generated by memtool (first line is not "
            f"'{C.GENERATED_MARK}'): {', '.join(mine[:5])}{' ...' if len(mine) > 5 else ''}. "
            "Move them elsewhere, or put that line first to let `memory entities --pages` replace them. Nothing was written."
        )
    report.written = [layout.rel(p) for p in atomic_write_many(todo)]  # fsyncs in parallel
    areas = layout.memory_dir / C.AREAS_DIR
    for kind in C.ENTITY_PAGE_KINDS:
        for page in sorted((areas / kind).glob(f"*/{C.AREA_PAGE_FILE}")):
            if page not in pages and _generated(page):
                page.unlink()
                report.removed.append(layout.rel(page))
                if not any(page.parent.iterdir()):
                    page.parent.rmdir()
    return report
