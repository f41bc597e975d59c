"""The Memory: transcript -> compress -> files (write path), and the entry points for reading.

Write order for crash safety: transcript, embedding, day file (the entry becomes visible), then
index.json. A crash before the day file leaves only orphans that `memory doctor` removes; a crash
after it leaves index.json behind, which the next write or `memory reindex` rebuilds.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from contextlib import suppress
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterable, Iterator

from memtool import confine
from memtool import constants as C
from memtool.cache import access_counts, count_access
from memtool.config import Settings
from memtool.context import ContextInput, ContextResult, Counting, Section, fit_to_provider_count, pack
from memtool.dates import anchor
from memtool.dayfile import read_day
from memtool.dedupe import Deduper, Duplicate
from memtool.docfreq import recent_doc_freq
from memtool.errors import BadInput, NotFound, ProviderError, StorageError, StoreCorrupt
from memtool.index_json import write_index
from memtool.models import ID_RE, Entities, Entry, iso, make_id, utcnow
from memtool.providers import Compressed, Compressor, Embedder, Hints
from memtool.quoting import log_tag_comment
from memtool.search.backends import derived_cache
from memtool.search.build import Known, entry_vector_key
from memtool.search.docs import superseded_by
from memtool.search.engine import Hit, Query, Weights, origin_label, search
from memtool.search.read import CacheView
from memtool.search.typos import query_terms
from memtool.search.union import Part, UnionView
from memtool.session_vectors import Prefetch, entry_vectors
from memtool.store import ArchiveLayout, Layout, Store, get_archived, is_untouched_template
from memtool.text import content_words
from memtool.tombstones import read_tombstones
from memtool.transcripts import check_size, without_injected

SKIPPED = "skipped: {}"  # the warning for a Markdown file the context does not read (a link out of the root, a FIFO, too large)


@dataclass
class Session:
    """One transcript to compress, with where it came from."""

    text: str
    when: datetime | None = None
    session: str = C.DEFAULT_SESSION
    importance: str | None = None
    source: str = "system_auto"
    agent: str = ""
    trusted: bool = True
    name: str = "<text>"  # file name, for messages
    supersedes: list[str] = field(default_factory=list)  # ids of stored entries this session replaces


@dataclass
class CompressResult:
    """What compress_many did: the entries, in input order (stored ones, and stored ones a duplicate
    repeats), the duplicates it found (memtool.dedupe), what it worked around (a provider fallback,
    a cache not updated) and the ids of stored entries the new ones supersede."""

    entries: list[Entry] = field(default_factory=list)
    repeats: set[int] = field(default_factory=set)  # positions in entries of sessions that added nothing: already stored
    duplicates: list[Duplicate] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (input name, why): sessions not stored, nor in `entries`

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, i: int) -> Entry:
        return self.entries[i]


@dataclass
class SearchResult:
    """One search: its hits, best first; what it worked around (a file read with replacement
    characters, an embedder down, a cache another process was rebuilding: hits from the last
    committed state); and typo fixes (query word no document holds -> indexed words searched too)."""

    hits: list[Hit] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    typo_fixes: dict[str, list[str]] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    def __getitem__(self, i):
        return self.hits[i]


@dataclass
class Shown:
    """One entry by id, live or archived, and where its files are (`memory show`, MCP memory_get)."""

    entry: Entry
    day_file: Path
    transcript: Path | None  # the kept transcript, when there is one
    archived: bool  # moved to memory/archive/YYYY/ by `memory archive`
    origin: str = "project"  # the root it is in: the project's, or the personal memory
    private: bool = False  # one of that root's private entries (memory/.private)


class Memory:
    def __init__(
        self,
        layout: Layout,
        settings: Settings,
        compressor_factory: Callable[[str], Compressor],
        embedder: Embedder,
        origin: str = "project",
        private: bool = False,
        ref_prefix: str = "",
    ):
        self.layout = layout
        self.origin = origin  # "project", or "personal": the user's own memory beside every project's (memtool.app)
        self.private = private  # a root's private entries (memory/.private): never in git, a backup or an export unless asked
        self.companions: list[Memory] = []  # the other roots searched with this one, each hit labelled with its own (memtool.app)
        self.ref_prefix = ref_prefix  # a companion's: what its Markdown hits' ids start with ("memory/.private/", "personal:")
        self.store = Store(layout)
        self.settings = settings
        self._compressor_factory = compressor_factory
        self.embedder = embedder
        self._view: CacheView | None = None
        self.cache = derived_cache(settings.cache, layout)  # the local SQLite cache, or the PostgreSQL one a team shares

    # -- write path ------------------------------------------------------------------------------
    def check_text(self, text: str, name: str = "<text>") -> str:
        if "\x00" in text:
            raise BadInput(f"{name}: looks like a binary file (NUL bytes); give a text transcript")
        if not text.strip():
            raise BadInput(f"{name}: the transcript is empty; nothing to compress")
        check_size(len(text.encode("utf-8", "surrogatepass")), self.settings.max_transcript_bytes, name)
        return text

    def redact(self, text: str) -> str:
        if not self.settings.redact:
            return text
        from memtool.redact import redact

        return redact(text, self.settings.redact_patterns)[0]

    def _compress_one(self, s: Session, provider: str, df: Counter, n_docs: int, text: str, warnings: list[str]) -> Entry:
        """`text`: the session's text, already checked and redacted by compress_many."""
        when = s.when or utcnow()
        hints = Hints(when=when, doc_freq=df, n_docs=n_docs)
        compressor, pending = self._compressor_factory(provider), False
        try:
            out: Compressed = compressor.compress(text, hints)
        except ProviderError as exc:
            if provider == "local":
                raise
            warnings.append(f"{s.name}: {exc} Saved with the local compressor's summary and marked pending; `memory retry` completes it.")
            compressor, pending = self._compressor_factory("local"), True  # a stand-in; `memory retry` completes it
            out = compressor.compress(text, hints)
        importance, ents = s.importance or out.importance, out.entities or Entities()
        if importance not in C.IMPORTANCE_LEVELS:  # a plugin compressor's answer; the session's own was checked
            raise ProviderError(f"the compressor gave importance {importance!r:.40}, expected one of {', '.join(C.IMPORTANCE_LEVELS)}; nothing was stored")
        entry = Entry(
            id=make_id(when, text),
            timestamp=iso(when),
            **{key: getattr(out, key) for key in ("summary", "keywords", "topics", "decisions", "action_items")},
            entities=replace(ents, dates=[anchor(d, when) for d in ents.dates]),  # 'yesterday' still means something in a year
            importance=importance,
            source_session=s.session,
            model=compressor.model,
            **{key: getattr(s, key) for key in ("source", "agent", "trusted")},
            pending=pending,
            supersedes=list(s.supersedes),
        )
        entry.count_tokens(text)
        return entry

    def compress(self, text: str, **kw) -> Entry:
        """One session's entry (stored, or the stored one it repeats). compress_many's result also
        says what was found already stored and what was worked around."""
        provider = kw.pop("provider", None)
        result = self.compress_many([Session(text=text, **kw)], provider=provider)
        if result.refused:
            raise BadInput(result.refused[0][1])
        return result.entries[0]

    def compress_many(
        self, sessions: Iterable[Session], provider: str | None = None, progress: Callable[[int], None] | None = None, batch: int = 256
    ) -> CompressResult:
        """Compress and store sessions, in batches: embeddings and file writes are grouped."""
        provider = provider or self.settings.compressor
        result = CompressResult()
        self._compressor_factory(provider)  # an unknown provider fails before anything is read or stored
        with Prefetch(self.embedder) as prefetch:  # each session's passages embedded while it is compressed
            self._compress_all(sessions, provider, result, prefetch, progress, batch)
        return result

    def _compress_all(
        self, sessions: Iterable[Session], provider: str, result: CompressResult, prefetch: Prefetch, progress: Callable[[int], None] | None, batch: int
    ) -> None:
        warnings = result.warnings
        done: list[Entry] = []
        pending_batch: list[tuple[Entry, str]] = []
        df, n_docs = recent_doc_freq(self.layout)  # words rare in recent memory are what sets a session apart
        results = result.entries  # in input order: stored entries, and stored ones a duplicate repeats
        dedupe = Deduper(self.layout)
        fresh: dict = {}  # entry_vector_key -> the vector this call computed, for the search cache
        forgotten = read_tombstones(self.layout.root)
        for s in sessions:
            check_session(s)  # before the duplicate check: a repeated session with bad options is refused too
            s = replace(s, session=self.redact(s.session), agent=self.redact(s.agent), when=(when := s.when or utcnow()))  # stored like the text
            text = self.redact(self.check_text(without_injected(s.text), s.name))  # what memtool injected is nobody's words
            gone = forgotten.get(make_id(when, text))
            if gone is not None:  # its entry would get the forgotten id, and every clone's next reindex would remove it again
                result.refused.append((s.name, forgotten_message(s.name, make_id(when, text), gone)))
                continue
            dedupe.require_known(s.supersedes)
            dup = dedupe.check(s.name, text, s.when or utcnow(), s.session)
            if dup is not None:
                result.duplicates.append(dup)
                if dup.kind == "same":  # nothing new to store
                    result.repeats.add(len(results))
                    results.append(dup.entry)
                    continue
                s = replace(s, supersedes=list(dict.fromkeys([*s.supersedes, dup.existing])))
            prefetch.submit(text)
            entry = self._compress_one(s, provider, df, n_docs, text, warnings)
            if dup is not None:
                dup.new = entry.id
            dedupe.add(entry, text)
            results.append(entry)
            df.update(set(content_words(entry.embed_text())))
            n_docs += 1
            pending_batch.append((entry, text))
            if len(pending_batch) >= batch:
                done.extend(self._write(pending_batch, fresh, warnings, prefetch))
                if progress:
                    progress(len(pending_batch))
                pending_batch = []
        if pending_batch:
            done.extend(self._write(pending_batch, fresh, warnings, prefetch))
            if progress:
                progress(len(pending_batch))
        if done:
            self._index_written(fresh, warnings, [e.id for e in done])
        result.superseded = list(dict.fromkeys(old for e in done for old in e.supersedes))

    def _index_written(self, fresh: dict, warnings: list[str], written: list[str]) -> None:
        """Bring the search cache up to date with the entries just stored: their words, and the vectors
        `fresh` holds (the entries', and the passages their vectors averaged: memtool.session_vectors);
        then index.json from it. A transcript's other passages (all but a short session's few) are
        embedded by the background fill, started here (setting `background_embed`): a compress costs
        the same few seconds whatever the session's length, and a search meanwhile says what has no
        vector yet. The passages files of the `written` entries whose passages all have a vector now
        (a short session's) are written here, the others' by the fill. The cache is derived: one that
        cannot be written now is built by the next search (index.json, memtool/index_json.py, by the next write)."""
        from memtool.search.fill import fill_later

        try:
            self.cache.refresh_cache(self.layout, self.embedder, errors=warnings, known=Known(vectors=fresh))
        except (StorageError, OSError) as exc:
            warnings.append(f"stored, but the search cache was not updated ({exc}); the next search updates it")
        else:
            with suppress(sqlite3.Error, OSError, StorageError):  # the store busy: the next fill writes them, the next search starts it
                self.cache.write_passage_files(self.layout, self.embedder.model, written)
                fill_later(self.layout, self.embedder, self.settings.background_embed)
        with self.store.lock():
            if note := write_index(self.layout, self.settings.compressor).not_written:
                warnings.append(note)

    def _write(self, items: list[tuple[Entry, str]], fresh: dict, warnings: list[str], prefetch: Prefetch) -> list[Entry]:
        """Store a batch. index.json (derived) is written once the call's last batch is stored
        (_index_written), so a bulk import stays linear; a crash before that leaves it stale, and the
        next write or `memory reindex` writes it."""
        entries = [e for e, _ in items]
        try:  # each entry's vector averages its session's passages (memtool.session_vectors), embedded by `prefetch`
            held = prefetch.collect()
            vectors, passages = entry_vectors(self.embedder, entries, {e.id: text for e, text in items}, known=lambda ks: {k: held[k] for k in ks if k in held})
            passages.update(held)
        except ProviderError as exc:
            warnings.append(f"embedding failed: {exc} Saved without vectors; `memory retry` embeds them.")
            vectors = None  # saved without vectors; `memory reembed` / `memory retry` fills them in
        else:
            fresh.update(passages)  # a kept transcript's chunks: the search cache reuses them
            fresh.update((entry_vector_key(e), v) for e, v in zip(entries, vectors))
        kept = [(e.id, text) for e, text in items if self.settings.keep_transcripts or e.pending]
        paths = [self.layout.transcript_file(i) for i, _ in kept]
        paths += [self.layout.embedding_file(e.id) for e in entries] if vectors is not None else []
        with self.store.lock():
            created = [p for p in paths if not p.exists()]  # files this write adds; removed again if the entries cannot be stored
            try:
                self.store.write_transcripts(kept)  # batched: fsyncs run in parallel
                if vectors is not None:
                    self.store.write_embeddings(entries, self.embedder.model, vectors)
                self.store.write_entries(entries)
            except StorageError:  # disk full / read-only: take back the files of entries not stored
                self._roll_back(created, {e.day for e in entries})
                raise
        self._view = None
        return entries

    def _roll_back(self, created: list[Path], days: set[str]) -> None:
        """Remove new transcript/embedding files (named <id>.*) whose entry did not reach its day file."""
        stored = {e.id for day in days if self.layout.day_file(day).is_file() for e in read_day(self.layout.day_file(day))}
        for path in created:
            if path.stem not in stored:
                with suppress(OSError):  # an orphan at worst, which `memory doctor --fix` quarantines
                    path.unlink(missing_ok=True)

    def log(self, text: str, when: datetime | None = None, source: str = "user_explicit", agent: str = "", session: str = "") -> Path:
        text = self.redact(text).strip()
        agent, session = self.redact(agent), self.redact(session)  # written into the line like the text
        if not text:
            raise BadInput("nothing to log: the text is empty")
        if source not in C.SOURCES:
            raise BadInput(f"source must be one of {', '.join(C.SOURCES)}, got {source!r}")
        when = (when or datetime.now()).astimezone()
        first, *rest = text.splitlines()
        line = f"- {when:%H:%M} {first}" + "".join(f"\n  {r}" for r in rest)
        if source != "user_explicit" or agent or session:  # values escaped: none can close the comment
            line += " " + log_tag_comment({"source": source, "agent": agent, "session": session})
        with self.store.lock():
            path = self.store.append_log(f"{when:%Y-%m-%d}", line)
        self._view = None  # the log is searchable: reload the cache on the next search
        return path

    # -- read path -------------------------------------------------------------------------------
    def view(self, progress=None, errors: list[str] | None = None, archive: bool = False) -> CacheView:
        """The search cache, brought up to date. Problems a rebuild met (a file skipped or read with
        replacement characters) go into `errors` (dropped when None)."""
        if archive:  # the cache over live + archived files: opened per call (rare), so never stale
            return self.cache.open_view(self.layout, self.embedder, progress, errors, archive=True)
        defer = self.settings.background_embed  # a fresh clone's kept transcripts: indexed by the background fill
        index = self._view
        if index is None or index.stale:  # stale: a view whose server was lost is opened anew
            index = self.cache.open_view(self.layout, self.embedder, progress, errors, defer=defer)
        self._view = None if index.stale else index  # a view read while another process built the cache is not kept
        return index

    def weights(self) -> Weights:
        """The settings of the same names, and the embedder's own semantic weight unless one is set."""
        s = self.settings
        same = {f.name: getattr(s, f.name) for f in fields(Weights) if hasattr(s, f.name)}
        semantic = s.semantic_weight if s.semantic_weight >= 0 else self.embedder.semantic_weight
        return Weights(**same, bm25=s.bm25_weight, dense=s.dense_weight, semantic=semantic)

    def search(self, query: Query | str, **kw) -> SearchResult:
        q = query if isinstance(query, Query) else Query(text=query, **kw)
        if q.limit < 1:
            raise BadInput("--limit must be at least 1")
        warnings: list[str] = []
        q = self._cut_query(q, warnings)
        sources = self.sources()
        access = {k: v for m in sources for k, v in access_counts(m.layout).items()} if self.settings.access_boost > 0 else None
        views = [m.view(errors=warnings, archive=q.archive) for m in sources]
        index, weights = (
            views[0] if len(views) == 1 else UnionView([Part(v, m.origin, m.private, m.ref_prefix) for v, m in zip(views, sources)]),
            self.weights(),
        )
        with index.reading():  # one committed state of each store for the whole search
            for m, view in zip(sources, views):
                m._vectors_missing(view, warnings)
            terms = query_terms(index, q.text, weights.typo_weight)
            try:
                hits = search(index, self.embedder, q, weights, access, terms=terms)
            except ProviderError as exc:  # the query could not be embedded (a remote embedder down): words only
                warnings.append(f"search: the embedder failed ({exc}); these hits come from word matches only")
                hits = search(index, self.embedder, q, replace(weights, dense=0.0, dense_fallback=False, semantic=0.0), access, terms=terms)
        if access is not None:  # use counts are kept while the boost is on (a write costs ~1 ms on ext4)
            for m in sources:
                count_access(m.layout, [h.id for h in hits if h.kind == "entry" and m.holds(h)])
        return SearchResult(self._newer_items(hits, warnings), warnings, terms.fixes)

    @staticmethod
    def _cut_query(q: Query, warnings: list[str]) -> Query:
        """A query longer than the embedder reads in one window is cut (at a word) to C.QUERY_MAX_CHARS, and says so."""
        if len(q.text) <= C.QUERY_MAX_CHARS:
            return q
        head = q.text[: C.QUERY_MAX_CHARS]
        space = max(head.rfind(" "), head.rfind("\n"))
        in_word = head[-1:].strip() and q.text[C.QUERY_MAX_CHARS : C.QUERY_MAX_CHARS + 1].strip()
        cut = head[:space].rstrip() if in_word and space >= C.QUERY_MAX_CHARS - 64 else head  # not half a word, unless that word is long
        warnings.append(
            f"query: searched its first {len(cut):,} characters of {len(q.text):,}, what the embedder reads in one window; ask in fewer words for the rest"
        )
        return replace(q, text=cut or head)

    def _vectors_missing(self, index: CacheView, warnings: list[str]) -> None:
        """While documents have no vector yet, or kept transcripts are not indexed yet
        (memtool/search/fill.py): say so, and start the background fill (setting `background_embed`)
        unless one runs."""
        from memtool.search.fill import fill_note, index_gap, start_fill

        missing, total, unindexed = index_gap(index)
        if not (missing or unindexed):
            return
        runs = self.settings.background_embed and (unindexed or self.embedder.reason is None)  # WordsOnlyEmbedder: no vectors to fill
        started = bool(runs) and start_fill(self.layout)
        warnings.append(fill_note(self.layout, missing, total, started, unindexed))

    def sources(self) -> list[Memory]:
        """This root and the roots searched with it, in that order."""
        return [self, *self.companions]

    def private_part(self) -> Memory | None:
        """This root's private entries (memory/.private), when there are any: what `--include-private` adds."""
        return next((m for m in self.companions if m.private and m.origin == self.origin), None)

    @property
    def shared(self) -> bool:
        """Whether this root's files are the project's, kept in git (not the personal memory, not private entries)."""
        return self.origin == "project" and not self.private

    def holder(self, entry_id: str) -> Memory:
        """The root (this one or a companion: its private part, the personal memory) whose files hold
        the entry `entry_id`, live or archived, or its transcript or vector left without it, or that an
        interrupted `memory forget` of it left unfinished; BadInput for what is not an id, NotFound when no root holds it."""
        from memtool.forget import read_journal

        entry_id = entry_id.strip()
        if not ID_RE.fullmatch(entry_id):
            raise BadInput(f"{entry_id!r:.60} is not an entry id (like ctx-20260207-1a2b3c4d). `memory search` lists ids.")
        for m in self.sources():
            left = m.layout.entry_files(entry_id)  # a forget's leftovers, which it removes
            if m.store.get(entry_id) or get_archived(m.layout, entry_id) or entry_id in read_journal(m.layout)[0] or any(p.is_file() for p in left):
                return m
        raise NotFound(f"no entry with id {entry_id}. `memory search` lists ids (`--archive`: archived ones too).")

    def holder_of_all(self, ids: Iterable[str]) -> Memory:
        """The one root holding these entries (`holder`), for a command on several at once. BadInput
        when they sit in two roots (one command per root, then); ids no root holds are left to the
        command to name, unless none of them is held (NotFound)."""
        held: dict[str, Memory] = {}
        for entry_id in dict.fromkeys(i.strip() for i in ids):
            with suppress(NotFound):
                held[entry_id] = self.holder(entry_id)
        if not held:
            named = ", ".join(dict.fromkeys(i.strip() for i in ids))
            raise NotFound(f"no entry with id {named} in this memory or the personal one; nothing was forgotten or changed. `memory search` lists ids")
        roots = {id(m): m for m in held.values()}
        if len(roots) > 1:
            where = "; ".join(f"{origin_label(m.origin, m.private) or 'project'}: {', '.join(i for i, h in held.items() if h is m)}" for m in roots.values())
            raise BadInput(f"these entries are in different memories ({where}); give the ids of one memory at a time. Nothing was changed.")
        return next(iter(roots.values()))

    def holds(self, hit: Hit) -> bool:
        """Whether `hit` came from this root."""
        return (hit.origin, hit.private) == (self.origin, self.private)

    def home_of(self, hit: Hit) -> Memory:
        """The root (this one or a companion) a hit came from."""
        return next((m for m in self.sources() if m.holds(hit)), self)

    def _newer_items(self, hits: list[Hit], warnings: list[str]) -> list[Hit]:
        """A superseded hit carries the open items of the entry that replaces it (the older list is
        no longer current): shown instead of its own by the context, the CLI and MCP."""
        for h in hits:
            if not h.superseded_by:
                continue
            try:
                newer = self.home_of(h).store.get(h.superseded_by)
            except StoreCorrupt as exc:  # its day file is damaged: the hit is shown without the newer items
                warnings.append(f"skipped: {exc}; `memory doctor` shows how to mend it")
                continue
            if newer is not None:
                h.newer_action_items = list(newer.action_items)
                h.newer_trusted = newer.trusted
        return hits

    def _with_items(self, hits: list[Hit], warnings: list[str]) -> list[Hit]:
        """Entry hits matched on the entry itself (no transcript passage) carry its decisions and open
        items, which the context shows under the summary."""
        for h in hits:
            if h.kind != "entry" or h.passage or h.passages or h.superseded_by:
                continue
            try:
                entry = self.home_of(h).store.get(h.id)
            except StoreCorrupt as exc:
                warnings.append(f"skipped: {exc}; `memory doctor` shows how to mend it")
                continue
            if entry is not None:
                h.decisions, h.action_items = list(entry.decisions), list(entry.action_items)
        return hits

    def context(
        self, query: str | None = None, budget: int | None = None, template: str | None = None, limit: int = 8, now: datetime | None = None
    ) -> ContextResult:
        """The bundle for `query` packed into `budget` tokens (held to the provider's count when Gemini is configured)."""
        given = self.context_input(query, limit, now)
        budget = self.settings.budget if budget is None else budget
        counting = self.counting()
        res = fit_to_provider_count(counting, lambda b: self.pack_offline(given, b, template), budget)
        res.warnings = [*given.warnings, *counting.warnings]
        return res

    def context_input(self, query: str | None = None, limit: int = 8, now: datetime | None = None) -> ContextInput:
        """What the bundle is packed from: Layer 3, the hits of one search (or the recent entries) and
        today's log, with what reading them worked around (`warnings`)."""
        warnings: list[str] = []
        layer3 = [s for m in self.sources() for s in (m._layer3(name, warnings, m is not self) for name in (C.MEMORY_MD, C.USER_MD)) if s is not None]
        today_path = self.layout.daily_log(f"{(now or datetime.now()):%Y-%m-%d}")
        today_text = confine.read_optional_text(today_path, C.MAX_DOC_BYTES, warnings, SKIPPED)
        today = Section("Today's log", _shown(today_text)) if today_text is not None else None
        if query and query.strip():
            found = self.search(Query(text=query, limit=limit, kinds=("entry", "transcript", "log"), latest_only=True))
            hits = self._with_items(found.hits, warnings)
            warnings += found.warnings
        else:
            hits = self.recent(limit, warnings)
        if today is not None:  # today's log is packed whole; do not repeat its chunks as hits
            today_ref = self.layout.rel(today_path) + "#"
            hits = [h for h in hits if not (self.holds(h) and h.ref.startswith(today_ref))]
        return ContextInput(layer3, hits, today, query or "", tuple(warnings))

    def counting(self) -> Counting:
        """What a context is counted with by the provider (memtool.context); its warnings are collected in it."""
        return Counting(self.settings, self.compressor, self.embedder, [])

    def pack_offline(self, given: ContextInput, budget: int, template: str | None = None) -> ContextResult:
        """`given` packed into `budget` tokens by the offline count (no provider request)."""
        res = pack(given.layer3, given.hits, given.today, budget, template or self.settings.template, given.query)
        res.warnings = list(given.warnings)
        return res

    def _layer3(self, name: str, warnings: list[str], labelled: bool = False) -> Section | None:
        """A Layer 3 file for the context, or None if missing or still the untouched template.
        `labelled`: a companion's, named with where it is from ("USER.md (personal)")."""
        text = confine.read_optional_text(self.layout.root / name, C.MAX_DOC_BYTES, warnings, SKIPPED)
        label = origin_label(self.origin, self.private) if labelled else ""
        return None if text is None or is_untouched_template(name, text) else Section(name, text, label)

    def recent(self, limit: int, warnings: list[str]) -> list[Hit]:
        """Without a query: the most recent entries, most important first among equals, leaving out
        those a newer live entry supersedes. An unreadable day file is skipped with a warning (the
        session-start bundle must not fail on one hand edit)."""
        errors: list[str] = []
        held = [(e, m) for m in self.sources() for e in m.store.iter_entries(errors)]
        held.sort(key=lambda em: (em[0].timestamp, C.IMPORTANCE_LEVELS.index(em[0].importance)), reverse=True)
        warnings += [f"skipped: {message}; `memory doctor` shows how to mend it" for message in errors]
        replaced = superseded_by([e for e, _ in held])
        return [_entry_hit(e, m.origin, m.private) for e, m in held if e.id not in replaced][:limit]

    def get(self, entry_id: str) -> Entry | None:
        return self.store.get(entry_id)

    def show(self, entry_id: str) -> Shown | None:
        """The entry with this id, live or else archived, or None."""
        for m in self.sources():  # a companion's entry too: search lists its id beside the project's
            home: Layout = m.layout
            entry = m.store.get(entry_id)
            if entry is None:
                entry = get_archived(m.layout, entry_id)
                if entry is None:
                    continue
                home = ArchiveLayout(m.layout.root, entry.day[:4])
            transcript = home.transcript_file(entry.id)
            return Shown(
                entry, home.day_file(entry.day), transcript if transcript.is_file() else None, archived=home is not m.layout, origin=m.origin, private=m.private
            )
        return None

    def compressor(self, name: str | None = None) -> Compressor:
        """The compressor registered as `name` (default: the configured one), built once."""
        return self._compressor_factory(name or self.settings.compressor)

    def invalidate(self) -> None:
        """Forget the loaded search index: the files were changed outside compress_many."""
        self._view = None


def _entry_hit(e: Entry, origin: str = "project", private: bool = False) -> Hit:
    """An entry as the query-less context shows it: its summary, what it decided and what it left open."""
    hit = Hit(
        id=e.id,
        kind="entry",
        score=0.0,
        source_session=e.source_session,
        timestamp=e.timestamp,
        text=e.summary,
        trusted=e.trusted,
        origin=origin,
        private=private,
    )
    hit.decisions, hit.action_items = list(e.decisions), list(e.action_items)
    return hit


def forgotten_message(name: str, entry_id: str, tombstone: dict) -> str:
    """Why a session is not stored: the entry it makes was forgotten (`memory forget`)."""
    when = f" on {str(tombstone['time'])[:10]}" if tombstone.get("time") else ""
    return (
        f"{name}: not stored: it makes entry {entry_id}, which was forgotten{when} (memory/index/{C.TOMBSTONES_FILE}); "
        "every clone's next reindex would remove it again. To keep this session anyway, give it another date (--date) or edit the transcript"
    )


def check_session(s: Session) -> None:
    """What the caller chose for a session: importance, source and date must be ones the store can hold."""
    if s.importance is not None and s.importance not in C.IMPORTANCE_LEVELS:
        raise BadInput(f"{s.name}: importance must be one of {', '.join(C.IMPORTANCE_LEVELS)}, got {s.importance!r:.40}")
    if s.source not in C.SOURCES:
        raise BadInput(f"{s.name}: source must be one of {', '.join(C.SOURCES)}, got {s.source!r:.40}")
    if s.when is not None and not C.MIN_YEAR <= s.when.year <= C.MAX_YEAR:
        raise BadInput(f"{s.name}: the session date {s.when.date().isoformat()} is out of range: years {C.MIN_YEAR}-{C.MAX_YEAR}")


def _shown(markdown: str) -> str:
    """Markdown as it reads rendered: HTML comments (a log line's provenance tag) left out."""
    from memtool.chunking import uncommented

    return "\n".join(line.rstrip() for line in uncommented(markdown).splitlines())
