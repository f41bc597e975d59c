"""The searchable documents of a memory: one per entry (its structured fields), one per chunk of
its kept transcript (pointing at its entry) and one per heading/paragraph chunk of the Markdown
layers, read from the files. Storing them is memtool/search/build.py's job."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, NamedTuple

from memtool import confine
from memtool import constants as C
from memtool.chunking import chunk_lines, chunk_markdown
from memtool.dayfile import DAY_RE, ParsedDays, read_day
from memtool.errors import StoreCorrupt, UnsafePath
from memtool.models import Entry, parse_iso
from memtool.store import Layout, is_untouched_template

# BM25 field weights for entry documents: each field is repeated this many times in the indexed text.
FIELD_REPEAT = {"summary": 1, "keywords": 2, "topics": 1, "decisions": 1, "action_items": 1, "entities": 2}


def entry_search_text(e: Entry) -> str:
    ents = e.entities.people + e.entities.systems + e.entities.dates
    lists = {"keywords": e.keywords, "topics": e.topics, "decisions": e.decisions, "action_items": e.action_items, "entities": ents}
    fields = {"summary": e.summary, **{name: " ".join(items) for name, items in lists.items()}}
    return "\n".join(" ".join([text] * FIELD_REPEAT[name]) for name, text in fields.items() if text)


class Declared(NamedTuple):
    """An entry that supersedes others, as the cache records it (its entries table)."""

    id: str
    timestamp: str
    supersedes: list[str]


def superseded_by(entries: Iterable[Entry | Declared]) -> dict[str, str]:
    """Old entry id -> the newest entry declaring `supersedes: [old id]`. Hand edits can close a
    cycle (a supersedes b, b supersedes a): its newest entry is then superseded by none, so one
    version of it is always current."""
    order = sorted(entries, key=lambda e: (e.timestamp, e.id))
    out: dict[str, str] = {}
    for e in order:
        out.update((old, e.id) for old in e.supersedes if old != e.id)
    rank = {e.id: i for i, e in enumerate(order)}
    done: set[str] = set()
    for start in list(out):
        path: list[str] = []
        x = start
        while x in out and x not in done and x not in path:
            path.append(x)
            x = out[x]
        if x in path:  # back where the walk has been: a cycle
            cycle = path[path.index(x) :]
            del out[max(cycle, key=lambda i: rank.get(i, -1))]
        done.update(path)
    return out


@dataclass
class Doc:
    kind: str
    ref: str  # entry id, or "relative/path.md#L12"
    entry: str  # owning entry id ('' for Markdown chunks)
    text: str  # text shown / packed into context
    index_text: str  # text given to BM25 and the embedder
    ts: float  # epoch seconds
    session: str = ""
    importance: str = "medium"
    topics: tuple[str, ...] = ()
    trusted: bool = True
    line: int = 0
    pinned: bool = False
    superseded_by: str = ""  # id of the newer entry that supersedes this one
    source: str = ""  # the file it came from (day file or Markdown file)


def source_key(layout: Layout, path: Path) -> str:
    """How the search cache names a source file: its path under the memory root, with '/', so that a
    store moved or renamed with its cache keeps it (absolute paths made the first search after a
    move a full build: over a minute at 100,000 entries). Cut from the path's text: a cold search
    names every day file, and pathlib's relative_to took 7 ms more for 2,600 of them."""
    text, root = str(path), str(layout.root)
    if not (text.startswith(root) and text[len(root) : len(root) + 1] == os.sep):
        return path.relative_to(layout.root).as_posix()  # not under the root as written: raises ValueError
    return text[len(root) + 1 :].replace(os.sep, "/")


def collect_docs(
    layout: Layout, errors: list[str], only: list[str] | None = None, parsed: ParsedDays | None = None, transcripts: bool = True
) -> tuple[list[Doc], list[Entry]]:
    """Documents of every source file (day files, then Markdown), each source's docs contiguous.
    With `only`, just the sources named there (by source_key, in that order: day files before
    Markdown files); day files in `parsed` are not read again. Without `transcripts`, the kept
    transcripts are not read (their passages are left to the background words fill). Which entry
    supersedes which is over every entry held: the store marks it (Doc.superseded_by)."""
    entries: list[Entry] = []
    sources: list[str] = []  # each entry's day file, by source_key
    for path in layout.day_files() if only is None else [layout.root / s for s in only if s.endswith(".json")]:
        try:
            day = read_day(path, parsed)
        except FileNotFoundError:
            continue  # deleted since it was listed: its signature shows it as gone next time
        except (StoreCorrupt, UnicodeDecodeError) as exc:
            errors.append(str(exc))
            continue
        entries.extend(day)
        sources.extend([source_key(layout, path)] * len(day))
    docs: list[Doc] = []
    for e, source in zip(entries, sources):
        common: dict[str, Any] = dict(
            entry=e.id,
            ts=parse_iso(e.timestamp).timestamp(),
            session=e.source_session,
            importance=e.importance,
            topics=tuple(e.topics),
            trusted=e.trusted,
            pinned=e.pinned,
            source=source,
        )
        docs.append(Doc(kind="entry", ref=e.id, text=e.summary, index_text=entry_search_text(e), **common))
        # none kept, deferred, or one that is a link, not a regular file or too large (reported): no chunks
        ttext = confine.read_optional_text(layout.transcript_file(e.id), C.MAX_DOC_BYTES, errors, "{}; not searchable") if transcripts else None
        docs += [Doc(kind="transcript", ref=f"{e.id}#L{ch.line}", text=ch.text, index_text=ch.text, line=ch.line, **common) for ch in chunk_lines(ttext or "")]
    for path in layout.markdown_files() if only is None else [layout.root / s for s in only if s.endswith(".md")]:
        rel = source_key(layout, path)
        daily = path.parent == layout.memory_dir or path.parent.parent == layout.archive_dir  # archived logs: memory/archive/YYYY/
        day = _log_day(path.stem) if daily else None
        kind = "memory" if day is None else "log"
        try:
            data = confine.read_bytes(path, C.MAX_DOC_BYTES)
            ts = path.stat().st_mtime if day is None else day.timestamp()
        except FileNotFoundError:
            continue  # deleted since it was listed
        except UnsafePath as exc:  # a link out of the root, a FIFO, a device, too large: never indexed
            errors.append(f"{exc}; not searchable")
            continue
        text = data.decode("utf-8", errors="replace")  # a person's file: one bad byte must not hide the rest
        if "\ufffd" in text and "\ufffd".encode() not in data:
            errors.append(f"{path}: not valid UTF-8; the bytes that are not were read as U+FFFD")
        if path.parent == layout.root:
            if is_untouched_template(path.name, text):
                continue  # still the file `memory init` wrote: boilerplate, not memory
        for ch in chunk_markdown(text):
            body = f"{ch.heading}\n{ch.text}" if ch.heading else ch.text
            docs.append(Doc(kind=kind, ref=f"{rel}#L{ch.line}", entry="", text=body, index_text=body, ts=ts, line=ch.line, session="", source=rel))
    return docs, entries


def _log_day(name: str) -> datetime | None:
    """A daily log's day (its local midnight) from its name: YYYY-MM-DD and a real day ("2026-13-45.md" is just a Markdown file)."""
    try:
        return datetime.fromisoformat(name).astimezone() if DAY_RE.match(name) else None
    except ValueError:
        return None
