"""The build side of the cache (memtool/cache.py): a change set brings it up to date with the files
in one transaction. The documents of the source files that changed are deleted and inserted again
(new document ids, so a posting never points at a newer document than it counted), their terms'
postings appended. Postings of deleted documents stay until dead documents outnumber
COMPACT_DEAD_SHARE of the live ones; the cache is then rebuilt from the files (vectors are kept:
nothing is embedded again). Also here: purging forgotten entries, and the words fill's step."""

from __future__ import annotations

import json
import sqlite3
import uuid
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from memtool import constants as C
from memtool.cache import READ_WAIT_S, SQLITE_VERSION, WRITE_WAIT_S, begin_writing, cache_path, connect, discard, file_sig, read_meta, reset
from memtool.dayfile import ParsedDays
from memtool.errors import LockBusy, ProviderError
from memtool.models import Entry
from memtool.search.cues import doc_cues
from memtool.search.docs import Declared, Doc, collect_docs, source_key, superseded_by
from memtool.search.read import DEFERRED, DOC_DTYPE, IMPORTANCE_CODE, KIND_CODE, CacheView, held_vectors, vector_gap
from memtool.search.typos import surface_words
from memtool.session_vectors import chunk_key, entry_vectors, kept_sessions, stored_passages
from memtool.store import Layout, LiveAndArchive, Store, archive_layouts
from memtool.text import stem_words, terms, words

TAIL_POSTINGS = 1024  # a term's newest postings block is extended while shorter than this, else a new one starts
COMPACT_DEAD_SHARE = 0.5  # dead documents over this share of the live ones (and over COMPACT_MIN_DEAD): rebuild
COMPACT_MIN_DEAD = 2000
POSTINGS_HELD = 4_000_000  # postings a change set holds before writing them (as one more block of each term)
BUILD_BATCH = 64  # source files read, embedded and inserted together: a rebuild holds one batch's documents
BUSY_NOTE = (
    "the search cache is being updated by another memtool process (a compress or a sync); this search "
    "read it as it was before, so the latest change may be missing"
)


# -- what the files are now -----------------------------------------------------------------------
@dataclass
class Sigs:
    """Stat signatures of the files the cache is built from, taken before reading them: a file changed
    meanwhile shows as changed next time."""

    files: dict[str, str]  # day files, then Markdown files, by source_key
    # kept transcripts by entry id (edited in place, they change no folder's mtime); None when not
    # taken: a search checks only the folder, since a stat per transcript would cost it ~7 ms per 1,000
    transcripts: dict[str, str] | None
    folder: str  # the transcripts folders': it changes when a transcript is added or removed

    @classmethod
    def take(cls, layout: Layout, files: dict[str, str] | None = None, transcripts: bool = True) -> "Sigs":
        folder = str(layout.transcripts_stamp())
        if files is None:
            files = {source_key(layout, p): file_sig(p) for p in [*layout.day_files(), *layout.markdown_files()]}
        return cls(files, _transcript_sigs(layout) if transcripts else None, folder)


@dataclass
class Known:
    """What the caller (a sync, a compress) already read or computed, so that a refresh does not redo it."""

    days: ParsedDays = field(default_factory=dict)  # day files parsed, with the stat they were read at
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # vectors by key (entry_vector_key, chunk_key)
    sigs: Sigs | None = None  # the files' signatures, taken before any of them was read


def _transcript_sigs(layout: Layout) -> dict[str, str]:
    """Each kept transcript's signature by entry id (none for one deleted while listing)."""
    return {de.name[:-3]: sig for de in layout.transcript_files() if (sig := file_sig(de)) != "-"}


def entry_vector_key(e: Entry) -> str:
    """How an entry's vector is keyed in the cache: its id and content hash."""
    return f"entry:{e.id}:{e.content_hash()}"


# -- writing --------------------------------------------------------------------------------------
class CacheBusy(Exception):
    """Another process is writing a change set, and a committed state is there to be read meanwhile."""


def refresh_cache(
    layout: Layout,
    embedder,
    progress=None,
    errors: list[str] | None = None,
    archive: bool = False,
    known: Known | None = None,
    wait: bool = True,
    full: bool = False,
    defer: bool = False,
) -> bool:
    """Bring the cache up to date with the files in one transaction: the documents of the source files
    that changed (or whose kept transcript did) are replaced; with `archive`, the files under
    memory/archive/YYYY/ are held too (as archived documents). `full`: rebuild every document (vectors
    are kept). Without `wait`, raises CacheBusy rather than wait for another process's change set, if
    there is a cache to read meanwhile. `defer`: over WORDS_INLINE_MAX new kept transcripts (a fresh
    clone) are left to the words fill (memtool/search/fill.py). Returns whether anything changed."""
    known = known or Known()
    sigs = known.sigs or Sigs.take(layout, transcripts=False)
    path = cache_path(layout)
    errors = [] if errors is None else errors
    try:
        return _refresh(path, layout, embedder, progress, errors, archive, known, sigs, wait, full, defer)
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            raise
        errors.append(f"{path} was damaged ({exc}); rebuilt from the files")
        discard(layout)
    return _refresh(path, layout, embedder, progress, errors, archive, known, sigs, wait, True, defer)


@dataclass
class Plan:
    """A change set's work: the source files in scope now (source_key -> (signature, archived)), which
    of them to read again, which are gone, and whether to rebuild every document instead."""

    now: dict[str, tuple[str, bool]]
    changed: list[str]
    removed: list[str]
    folder: str  # the transcripts folders' stamp, recorded with the change set
    rebuild: bool = False
    transcripts: dict[str, str] | None = None  # kept transcripts' signatures, when taken


def _plan(
    conn: sqlite3.Connection, layout: Layout, model: str, sigs: Sigs, now: dict[str, tuple[str, bool]], archive: bool, full: bool, look: bool = True
) -> Plan:
    """Without `look`, a changed transcripts folder is not listed (the caller goes on to plan again
    under the lock whenever the folder changed)."""
    meta = read_meta(conn)
    if full or meta.get("version") != SQLITE_VERSION or meta.get("model") != model:
        return Plan(now, sorted(now), [], sigs.folder, rebuild=True)
    held = {k: (sig, bool(a)) for k, sig, a in conn.execute("SELECT key, sig, archived FROM sources")}
    in_scope = {k for k, (_, a) in held.items() if archive or not a}
    changed = {k for k, v in now.items() if held.get(k) != v}
    removed = in_scope - set(now)
    transcripts = sigs.transcripts
    if transcripts is not None:
        recorded = dict(conn.execute("SELECT id, transcript FROM entries WHERE archived = 0").fetchall())
        edited = {i for i in {*recorded, *transcripts} if recorded.get(i, "-") != transcripts.get(i, "-")}
    elif look and meta.get("transcripts_dir") != sigs.folder:  # a transcript was added or removed: find which by name (no stat each)
        kept = {de.name[:-3] for de in layout.transcript_files()}
        held = {i for (i,) in conn.execute("SELECT id FROM entries WHERE archived = 0 AND transcript != '-'")}
        edited = kept ^ held
    else:
        edited = set()
    if edited:
        days = dict(conn.execute("SELECT id, source FROM entries WHERE archived = 0 AND id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(edited)),)))
        changed |= {days[i] for i in edited if i in days and days[i] in now}
    return Plan(now, sorted(changed), sorted(removed), sigs.folder, transcripts=transcripts)


def _refresh(
    path: Path, layout: Layout, embedder, progress, errors: list[str], archive: bool, known: Known, sigs: Sigs, wait: bool, full: bool, defer: bool
) -> bool:
    now = {k: (sig, False) for k, sig in sigs.files.items()}  # source_key -> (signature now, archived) of the files in scope
    if archive:
        for lay in archive_layouts(layout):
            now.update((source_key(layout, p), (file_sig(p), True)) for p in [*lay.day_files(), *lay.markdown_files()])
    with closing(connect(path, timeout=WRITE_WAIT_S if wait else READ_WAIT_S)) as conn:
        plan = _plan(conn, layout, embedder.model, sigs, now, archive, full, look=False)
        if not (plan.rebuild or plan.changed or plan.removed) and read_meta(conn).get("transcripts_dir") == sigs.folder:
            return False
        if not wait:
            conn.execute("PRAGMA busy_timeout = 0")  # another process's change set: answer from the last committed state
        try:
            begin_writing(conn, path)
        except LockBusy:
            if wait:
                raise
            if read_meta(conn).get("version") == SQLITE_VERSION:
                raise CacheBusy(str(path)) from None
            conn.execute(f"PRAGMA busy_timeout = {WRITE_WAIT_S * 1000}")  # no cache to answer from yet (a fresh clone): wait for the one being built
            begin_writing(conn, path)
        with conn:
            plan = _plan(conn, layout, embedder.model, sigs, now, archive, full)  # again, under the lock
            cols = None if plan.rebuild else _columns(conn)
            dead = 0 if cols is None else int((~cols["alive"]).sum())
            if cols is None or dead > COMPACT_MIN_DEAD and dead > COMPACT_DEAD_SHARE * (cols.shape[0] - dead):
                plan = Plan(now, sorted(now), [], sigs.folder, rebuild=True)
            _apply(conn, layout, embedder, plan, errors, known, progress, defer and not archive)
        return True


def _columns(conn: sqlite3.Connection) -> np.ndarray | None:
    """The packed per-document columns, as a copy to change; None before the first change set."""
    row = conn.execute("SELECT data FROM columns WHERE name = 'docs'").fetchone()
    return None if row is None else np.frombuffer(row[0], dtype=DOC_DTYPE).copy()


def reread_deferred(conn: sqlite3.Connection, layout: Layout, embedder, size: int, errors: list[str]) -> tuple[int, int]:
    """The words fill's step (memtool/search/fill.py), in the transaction begun on `conn`: the live
    source files from the first one with entries DEFERRED on, in the order a one-go build reads them,
    are read again (their kept transcripts' passages with them) until about `size` entries are; so
    once all are, the live documents are numbered in the order of a cache built in one go (the same
    ranking, ties included). Returns (entries read, entries still DEFERRED); (0, 0) when nothing is
    left or the cache is of another version or model (the next refresh rebuilds it)."""
    meta = read_meta(conn)
    if meta.get("version") != SQLITE_VERSION or meta.get("model") != embedder.model or meta.get("words_missing", "0") == "0":
        return 0, 0
    held = dict(conn.execute("SELECT source, count(*) FROM entries WHERE archived = 0 GROUP BY source").fetchall())
    deferred = {s for (s,) in conn.execute("SELECT DISTINCT source FROM entries WHERE transcript = ?", (DEFERRED,))}
    order = sorted((k for (k,) in conn.execute("SELECT key FROM sources WHERE archived = 0 ORDER BY key")), key=lambda k: k.endswith(".md"))
    start = next((i for i, k in enumerate(order) if k in deferred), None)
    part: list[str] = []
    for k in order[start:] if start is not None else sorted(deferred):
        part.append(k)
        size -= held.get(k, 1)
        if size <= 0:
            break
    now = {k: (file_sig(layout.root / k), False) for k in part}
    changed = [k for k in part if now[k][0] != "-"]
    _apply(conn, layout, embedder, Plan(now, changed, [k for k in part if now[k][0] == "-"], meta.get("transcripts_dir", "")), errors)
    return sum(held.get(k, 0) for k in part), int(read_meta(conn).get("words_missing", "0"))


def _apply(conn: sqlite3.Connection, layout: Layout, embedder, plan: Plan, errors: list[str], known: Known | None = None, progress=None, defer=False) -> None:
    known, rebuild, changed, now = known or Known(), plan.rebuild, plan.changed, plan.now
    before = {} if rebuild else read_meta(conn)
    if rebuild:
        reset(conn)
    cols = np.zeros(0, dtype=DOC_DTYPE) if rebuild else _columns(conn)
    assert cols is not None  # a cache not rebuilt from scratch has its columns
    # the documents of the changed and removed sources go
    gone = [*changed, *plan.removed]
    dead = [i for (i,) in conn.execute("SELECT id FROM docs WHERE source IN (SELECT value FROM json_each(?))", (json.dumps(gone),))]
    cols["alive"][dead] = False
    for table, column, ids in (("docvecs", "id", dead), ("docs", "source", gone), ("entries", "source", gone), ("sources", "key", gone)):
        conn.execute(f"DELETE FROM {table} WHERE {column} IN (SELECT value FROM json_each(?))", (json.dumps(ids),))
    # read them again, BUILD_BATCH sources at a time (a rebuild holds one batch's text and vectors,
    # not the whole memory's): which entries supersede which is worked out over every entry held
    arch_sources = {s for s in changed if now[s][1]}
    deferred = _to_defer(conn, layout) if defer else set()  # kept transcripts left to the words fill
    tsig = (
        dict.fromkeys(deferred, DEFERRED) if deferred else plan.transcripts if plan.transcripts is not None or len(changed) < 50 else _transcript_sigs(layout)
    )
    transcript_sig = tsig.get if tsig is not None else lambda i: file_sig(layout.transcript_file(i))
    declared = [Declared(i, ts, json.loads(sup)) for i, ts, sup in conn.execute("SELECT id, timestamp, supersedes FROM entries WHERE supersedes != '[]'")]
    read: list[Entry] = []  # entries read that supersede others
    stored_with: dict[str, str] = {}  # entry id -> the superseded_by its documents were inserted with
    groups: dict[str, int] = dict(conn.execute("SELECT key, id FROM groups").fetchall())
    postings = Postings()
    first = cols.shape[0]
    unvectored = before.get("vectors_missing", "0") != "0"  # anything left for the vector fill
    for live, archived in _batches(changed, arch_sources):
        docs, entries, sources = _collect(layout, errors, live, archived, known, not deferred)
        read += [e for e in entries if e.supersedes]
        newer = superseded_by([*declared, *read])
        for d in docs:
            if d.entry:
                d.superseded_by = stored_with[d.entry] = newer.get(d.entry, "")
        rows = []
        for e, src in zip(entries, sources):
            kept = "-" if src in arch_sources else transcript_sig(e.id) or "-"
            rows.append((e.id, src, e.timestamp, json.dumps(list(e.supersedes)), kept, int(src in arch_sources)))
        conn.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?)", rows)
        by_id = {e.id: e for e in entries}
        keys = [entry_vector_key(by_id[d.ref]) if d.kind == "entry" else chunk_key(d.index_text) for d in docs]
        vectors = _embed(conn, LiveAndArchive(layout.root) if archived else layout, embedder, docs, keys, by_id, known, errors, progress)
        # each new document's vector by its id (a search reads its candidates' rows); none when the embedder was down
        vec_rows = [(cols.shape[0] + j, vectors[k].astype("<f2").tobytes()) for j, k in enumerate(keys) if k in vectors]
        conn.executemany("INSERT OR REPLACE INTO docvecs VALUES (?, ?)", vec_rows)
        unvectored = unvectored or any(k not in vectors for k in keys)
        cols = _insert_docs(conn, docs, keys, cols, arch_sources, groups, postings)
        if sum(part[0].size for part in postings.parts) > POSTINGS_HELD:  # written as further blocks of their terms, so a rebuild's memory stays flat
            _append_postings(conn, postings.rows(), fresh=first == 0)
    conn.executemany("INSERT OR REPLACE INTO sources VALUES (?, ?, ?)", [(s, now[s][0], int(now[s][1])) for s in changed])
    _append_postings(conn, postings.rows(), fresh=first == 0)
    newer = superseded_by([*declared, *read])
    old = json.loads(before.get("newer", "{}"))
    # documents marked with another superseding entry than the final one: superseded by an entry of a
    # later batch, or their superseding entry changed (in a day file not read again)
    stale = {i for i, given in stored_with.items() if newer.get(i, "") != given} | {i for i in {*old, *newer} if old.get(i) != newer.get(i)}
    conn.executemany("UPDATE docs SET superseded_by = ? WHERE entry = ?", [(newer.get(i, ""), i) for i in stale])
    if rebuild:  # vectors no document uses any more (old versions of edited text) go with a rebuild
        conn.execute("DELETE FROM vectors WHERE model = ? AND key NOT IN (SELECT vkey FROM docs)", (embedder.model,))
    conn.execute("INSERT OR REPLACE INTO columns VALUES ('docs', ?)", (cols.tobytes(),))
    missing, total = vector_gap(conn) if unvectored else (0, 0)  # what the vector fill has left to do
    meta = {
        "version": SQLITE_VERSION,
        "model": embedder.model,
        "transcripts_dir": plan.folder,
        "newer": json.dumps(newer),
        "generation": uuid.uuid4().hex,
        "dim": str(embedder.dim),
        "vectors_missing": str(missing),
        "vectors_total": str(total),
    }
    if deferred or before.get("words_missing", "0") != "0":  # what the words fill has left to do
        meta["words_missing"] = str(conn.execute("SELECT count(*) FROM entries WHERE transcript = ?", (DEFERRED,)).fetchone()[0])
    conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", list(meta.items()))


def _to_defer(conn: sqlite3.Connection, layout: Layout) -> set[str]:
    """The kept transcripts (by entry id) a search's change set leaves to the words fill: all of them
    when more than WORDS_INLINE_MAX are new to the cache (not recorded with their entry), else none."""
    kept = {de.name[:-3] for de in layout.transcript_files()}
    recorded = {i for (i,) in conn.execute("SELECT id FROM entries WHERE archived = 0 AND transcript != '-'")} if len(kept) > C.WORDS_INLINE_MAX else kept
    return kept if len(kept - recorded) > C.WORDS_INLINE_MAX else set()


def _collect(
    layout: Layout, errors: list[str], live: list[str], archived: list[str], known: Known, transcripts: bool = True
) -> tuple[list[Doc], list[Entry], list[str]]:
    """The documents and entries of these sources (live ones, then archived ones), and each entry's source."""
    docs: list[Doc] = []
    entries: list[Entry] = []
    for lay, only in ((layout, live), (LiveAndArchive(layout.root) if archived else layout, archived)):
        if only:
            d, e = collect_docs(lay, errors, only=only, parsed=known.days, transcripts=transcripts)
            docs += d
            entries += e
    day_of = {d.entry: d.source for d in docs if d.kind == "entry"}
    return docs, entries, [day_of[e.id] for e in entries]


def _batches(changed: list[str], archived: set[str]) -> Iterator[tuple[list[str], list[str]]]:
    """(live sources, archived sources) to read together, BUILD_BATCH at a time, in the order one
    read of them all gives its documents: live day files, live Markdown, archived day files, archived
    Markdown (so a batched build numbers the documents as a whole one does)."""
    ordered = sorted(changed, key=lambda s: (s in archived, s.endswith(".md")))
    for at in range(0, len(ordered), BUILD_BATCH):
        part = ordered[at : at + BUILD_BATCH]
        yield [s for s in part if s not in archived], [s for s in part if s in archived]


def _insert_docs(
    conn: sqlite3.Connection, docs: list[Doc], keys: list[str], cols: np.ndarray, archived: set[str], groups: dict[str, int], postings: "Postings"
) -> np.ndarray:
    """Insert `docs` with ids after every id used so far and their words; their postings are counted
    into `postings` (written once the change set's last batch is in); returns the columns grown.
    `groups`: result key -> group id of every group held (new ones are added to it)."""
    first = cols.shape[0]
    add = np.zeros(len(docs), dtype=DOC_DTYPE)
    next_group = max(groups.values(), default=-1) + 1
    new_groups: list[tuple[int, str]] = []
    rows = []
    flat: list[str] = []  # every document's terms, one after another
    seen: set[str] = set()
    for j, (d, key) in enumerate(zip(docs, keys)):
        i = first + j
        g = groups.get(gkey := d.entry or d.ref)
        if g is None:  # a new group: the next id after the held ones and those added so far
            g = groups[gkey] = next_group + len(new_groups)
            new_groups.append((g, gkey))
        ws = words(d.index_text)
        ts = terms(ws) or [""]
        flat += ts
        seen.update(ws)
        add[j] = (KIND_CODE[d.kind], IMPORTANCE_CODE.get(d.importance, 1), d.trusted, d.pinned, doc_cues(ws), True, d.source in archived, len(ts), g, d.ts)
        topics = json.dumps(list(d.topics), ensure_ascii=False)
        rows.append((i, d.source, d.kind, d.ref, d.entry, d.text, d.session, d.ts, d.importance, topics, int(d.trusted), d.line, d.superseded_by, key))
    conn.executemany("INSERT INTO groups VALUES (?, ?)", new_groups)
    conn.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    conn.executemany("INSERT OR IGNORE INTO words VALUES (?)", [(w,) for w in surface_words(list(seen))])
    postings.add(flat, add["length"].astype(np.int64), first)
    return np.concatenate([cols, add])


class Postings:
    """The postings of documents inserted batch by batch: each batch's (term id, document) pairs
    counted in numpy (no loop per posting), kept as compact arrays until written: at the end of the
    change set, or earlier as one more block of each term once POSTINGS_HELD are held."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (term ids, document ids, term counts)

    def add(self, flat: list[str], lengths: np.ndarray, first: int) -> None:
        """Documents first, first + 1, ... whose terms are `flat` in turn (`lengths` of them each)."""
        vocab = self.vocab
        for term in dict.fromkeys(flat):  # new terms get ids in first-seen order; then one mapping pass
            vocab.setdefault(term, len(vocab))
        tid = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
        n = max(lengths.size, 1)
        pairs, tfs = np.unique(tid * n + np.repeat(np.arange(lengths.size, dtype=np.int64), lengths), return_counts=True)
        self.parts.append(((pairs // n).astype(np.int32), (pairs % n + first).astype("<i4"), np.minimum(tfs, 65535).astype("<u2")))

    def rows(self) -> Iterator[tuple[str, bytes, bytes]]:
        """(term, its document ids ascending, how often each holds it), terms in the order first met."""
        if not self.parts:
            return
        term_of, docs, tfs = (np.concatenate(a) for a in zip(*self.parts))
        self.parts = []
        order = np.argsort(term_of, kind="stable")  # by term, each term's documents still ascending (batches come in id order)
        term_of, docs, tfs = term_of[order], docs[order], tfs[order]
        bounds = np.flatnonzero(np.diff(term_of)) + 1
        names = list(self.vocab)
        for lo, hi in zip(np.concatenate(([0], bounds)).tolist(), np.concatenate((bounds, [term_of.size])).tolist()):
            if hi > lo:
                yield names[term_of[lo]], docs[lo:hi].tobytes(), tfs[lo:hi].tobytes()


def _append_postings(conn: sqlite3.Connection, postings: Iterator[tuple[str, bytes, bytes]], fresh: bool) -> None:
    """Into a new cache, one row per term; else a term's newest block is extended while short."""
    if fresh:
        conn.executemany("INSERT INTO postings VALUES (?, ?, ?)", postings)
        return
    inserts, updates = [], []
    for term, d, t in postings:
        tail = conn.execute("SELECT rowid, docs, tfs FROM postings WHERE term = ? ORDER BY rowid DESC LIMIT 1", (term,)).fetchone()
        if tail is not None and len(tail[1]) // 4 < TAIL_POSTINGS:
            updates.append((tail[1] + d, tail[2] + t, tail[0]))
        else:
            inserts.append((term, d, t))
    conn.executemany("INSERT INTO postings VALUES (?, ?, ?)", inserts)
    conn.executemany("UPDATE postings SET docs = ?, tfs = ? WHERE rowid = ?", updates)


def _embed(
    conn: sqlite3.Connection, layout: Layout, embedder, docs: list[Doc], keys: list[str], by_id: dict[str, Entry], known: Known, errors: list[str], progress
) -> dict[str, np.ndarray]:
    """A vector for every document key the cache does not hold yet for this model: from `known`, an
    entry's embedding file, else embedded now (entries first: their vectors average their kept
    transcripts' passages, which the chunks then reuse). Only when at most EMBED_INLINE_MAX keys
    are missing: more (a fresh clone, a new model, a bulk import of transcripts) are left without a
    vector for the vector fill (memtool/search/fill.py), which reads the entries' files and embeds
    the rest in batches, each committed; words find them meanwhile."""
    model = embedder.model
    held = held_vectors(conn, model, keys)
    added = {k: np.asarray(known.vectors[k], dtype=np.float32) for k in keys if k in known.vectors and k not in held}
    missing = {k: d for d, k in zip(docs, keys) if k not in held and k not in added}
    if len(missing) > C.EMBED_INLINE_MAX:
        missing = {}  # left to the vector fill, entries' embedding files too (10,000 of them take a second to read)
    embed_missing(layout, embedder, missing, keys, by_id, held, added, errors, progress)
    conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", [(model, k, v.astype("<f2").tobytes()) for k, v in added.items()])
    return {**added, **held}


def embed_missing(
    layout: Layout, embedder, missing: dict[str, Doc], keys: list[str], by_id: dict[str, Entry], held: dict, added: dict, errors: list[str], progress
) -> None:
    """Into `added`, a vector for each `missing` document: its entry's embedding or passages file, else embedded now
    (entries first: their vectors average their kept transcripts' passages, which the chunks then
    reuse, one embedder call each). If the embedder fails, the rest stay without a vector, said in
    `errors`: words still find them, and a later fill embeds them. SQLite's and PostgreSQL's change sets share it."""
    model = embedder.model
    store = Store(layout)
    stored = stored_passages(layout, {d.entry for d in missing.values() if d.kind == "transcript"}, model, embedder.dim)
    added.update((k, stored[k]) for k in missing if k in stored)
    for k, d in missing.items():
        if d.kind == "entry" and (vec := store.vector_for(by_id[d.ref], model, embedder.dim)) is not None:
            added[k] = np.asarray(vec, dtype=np.float32)

    def lookup(ks: list[str]) -> dict[str, np.ndarray]:
        return {k: v for k in ks if (v := added.get(k, held.get(k))) is not None}

    entries = {k: by_id[d.ref] for k, d in missing.items() if d.kind == "entry" and k not in added}
    try:
        if entries:
            vecs, passages = entry_vectors(embedder, list(entries.values()), kept_sessions(layout, entries.values()), known=lookup)
            added.update(passages)
            added.update(zip(entries, vecs))
            if progress:
                progress(len(entries))
        chunks = {k: d.index_text for k, d in missing.items() if k not in added}  # passages the entries above embedded are in
        if chunks:
            added.update(zip(chunks, np.asarray(embedder.embed_documents(list(chunks.values())), dtype=np.float32)))
            if progress:
                progress(len(chunks))
    except ProviderError as exc:  # no retry: a service that is down would cost a timeout each
        left = sum(1 for k in keys if k not in held and k not in added)
        errors.append(f"{left} documents have no vector yet ({exc}); search finds them by their words")


def purge_entries(layout: Layout, entry_ids: list[str], passage_keys: Sequence[str] = ()) -> int:
    """Delete what the cache holds of these entries in one transaction, so no copy of their text
    outlives `memory forget`: their documents and records, the vectors only they used, every posting
    of a document not live (so a term only they held goes), and the words as written whose stem no
    live document holds any more, with their use counts and the compressor's word counts (counted
    again at the next compress). Deleted content is overwritten (secure_delete) and the WAL truncated
    when no reader holds it. `passage_keys`: vector keys of their transcripts' passages (forget's
    journal), deleted too when no live document uses them, so a refresh that already dropped the
    documents leaves no vector behind. The day files they came from are marked as changed, so the
    next refresh reads them again. Returns the documents removed. No cache: nothing to do."""
    path = cache_path(layout)
    if not path.is_file() or not entry_ids:
        return 0
    with closing(connect(path, timeout=WRITE_WAIT_S)) as conn:
        conn.execute("BEGIN IMMEDIATE")
        with conn:
            ids = json.dumps(list(entry_ids))
            rows = conn.execute("SELECT id, vkey, source FROM docs WHERE entry IN (SELECT value FROM json_each(?))", (ids,)).fetchall()
            keys = json.dumps(sorted({k for _, k, _ in rows} | {f"text:{i}" for i in entry_ids} | set(passage_keys)))
            # an entry's passages' group key is its id
            for table, column in (("docs", "entry"), ("entries", "id"), ("groups", "key"), ("access", "id"), ("index_lines", "id")):
                conn.execute(f"DELETE FROM {table} WHERE {column} IN (SELECT value FROM json_each(?))", (ids,))
            conn.execute("DELETE FROM vectors WHERE key IN (SELECT value FROM json_each(?)) AND key NOT IN (SELECT vkey FROM docs)", (keys,))
            conn.executemany("DELETE FROM vectors WHERE key >= ? AND key < ?", [(f"entry:{i}:", f"entry:{i};") for i in entry_ids])
            conn.execute("UPDATE sources SET sig = '-' WHERE key IN (SELECT value FROM json_each(?))", (json.dumps(sorted({s for _, _, s in rows})),))
            cols = _columns(conn)
            if cols is not None:
                cols["alive"][[i for i, _, _ in rows]] = False
                conn.execute("UPDATE columns SET data = ? WHERE name = 'docs'", (cols.tobytes(),))
                conn.execute("DELETE FROM docvecs WHERE id IN (SELECT value FROM json_each(?))", (json.dumps([i for i, _, _ in rows]),))
                for rowid, term, d, t in conn.execute("SELECT rowid, term, docs, tfs FROM postings").fetchall():
                    docs = np.frombuffer(d, dtype="<i4")
                    keep = cols["alive"][docs]
                    if not keep.any():
                        conn.execute("DELETE FROM postings WHERE rowid = ?", (rowid,))
                    elif not keep.all():
                        conn.execute(
                            "UPDATE postings SET docs = ?, tfs = ? WHERE rowid = ?", (docs[keep].tobytes(), np.frombuffer(t, "<u2")[keep].tobytes(), rowid)
                        )
                held = {t for (t,) in conn.execute("SELECT DISTINCT term FROM postings")}
                ws = [w for (w,) in conn.execute("SELECT word FROM words")]
                conn.executemany("DELETE FROM words WHERE word = ?", [(w,) for w, stem in zip(ws, stem_words(ws)) if stem not in held])
            if read_meta(conn).get("vectors_missing", "0") != "0":  # the vector fill's count, without the documents removed
                conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", zip(("vectors_missing", "vectors_total"), map(str, vector_gap(conn))))
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('generation', ?)", (uuid.uuid4().hex,))
            conn.execute("DELETE FROM day_words")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return len(rows)


def open_view(layout: Layout, embedder, progress, errors: list[str] | None, archive: bool = False, defer: bool = False) -> CacheView:
    """The cache, brought up to date first (refresh_cache; `defer`: many new kept transcripts are left
    to the words fill), as a read snapshot. A damaged cache is rebuilt from the files. While another
    process writes a change set (a detached session-end compress), the last committed state is read,
    said in `errors` (dropped when None), and the view is marked `stale`."""
    stale, errors = False, [] if errors is None else errors
    try:
        refresh_cache(layout, embedder, progress, errors, archive, wait=False, defer=defer)
    except CacheBusy:
        stale = True
    path = cache_path(layout)
    try:
        index = CacheView(path, archive)
    except (sqlite3.DatabaseError, ValueError) as exc:
        errors.append(f"{path} was damaged ({exc}); rebuilt from the files")
        discard(layout)
        refresh_cache(layout, embedder, progress, errors, archive, defer=defer)
        return CacheView(path, archive)
    index.stale = stale
    if stale:
        errors.append(BUSY_NOTE)
    return index
