"""Incremental sync: make index.json, the embedding files and the search cache match the files.

The per-day entry files and the Markdown files are the truth. A small manifest in the cache
(memory/.cache/memtool.sqlite, kept by `memtool.sync_scan`) remembers, per file, (size, mtime_ns, content
hash) and, per entry, the content hash its embedding file was verified against, so a sync with
nothing changed only stats files. Changed files are re-read and compared by content hash, not by
mtime; only entries whose content hash changed (or whose embedding file is missing, corrupt or from
another model) are re-embedded. A file that cannot be parsed is reported as path:line and skipped:
its entries stay in index.json and their embedding files are kept. The search cache
(`search.build.refresh_cache`) is then brought up to date in one transaction, and index.json
written whole (`memtool.index_json`).

Embedding runs outside the root's lock and writes each batch as it goes, so an interrupted sync or
`memory reembed` resumes where it stopped.
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from memtool import constants as C
from memtool.cache import write_state
from memtool.dayfile import read_day
from memtool.forget import bury
from memtool.fsutil import atomic_write_text, stat_sig
from memtool.index_json import write_index
from memtool.memory import Memory
from memtool.models import Entry
from memtool.search.build import Known, Sigs, entry_vector_key
from memtool.search.docs import source_key
from memtool.search.fill import fill_vectors
from memtool.session_vectors import entry_vectors, kept_sessions
from memtool.store import Layout, Store, archive_layouts, vector_file_ok
from memtool.sync_scan import Delta, Manifest, Scan, Seen, scan_files

Progress = Callable[[str, int, int], None]  # (task, done, total); total 0 when unknown


@dataclass
class SyncReport:
    entries: Delta = field(default_factory=Delta)  # entry ids
    markdown: Delta = field(default_factory=Delta)  # Markdown paths relative to the root
    embedded: int = 0  # entry vectors computed
    filled: int = 0  # search cache documents given a vector by the fill (memtool/search/fill.py)
    passage_files: int = 0  # passages files written (for a clone to read instead of embedding)
    dropped: int = 0  # embedding files of vanished entries removed
    buried: list[str] = field(default_factory=list)  # forgotten (tombstoned) ids a merge brought back, removed again
    index_rebuilt: str = ""  # why index.json was rewritten ('' if it was not)
    search_rebuilt: bool = False
    first: bool = False  # no manifest yet (or --full): every file counts as added
    full: bool = False
    model: str = ""
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    touched: list[Path] = field(default_factory=list)  # files this sync wrote or deleted
    embedder_set: str = ""  # `memory reembed --provider`: the config file it set the embedder in, relative to the root
    warnings: list[str] = field(default_factory=list)  # not problems, but worth knowing (an environment variable overriding the switch)

    @property
    def changed(self) -> bool:
        done = (self.entries, self.markdown, self.embedded, self.filled, self.passage_files, self.dropped, self.buried, self.index_rebuilt)
        return any(done) or self.search_rebuilt

    def to_dict(self) -> dict:
        out = asdict(self)
        del out["touched"]
        return {**out, "seconds": round(self.seconds, 3)}

    def line(self) -> str:
        """One-line status."""
        if not self.changed and not self.errors:
            return f"up to date ({self.seconds:.2f}s)"
        parts = [f"entries {self.entries.text()}", f"markdown {self.markdown.text()}", f"embedded {self.embedded}"]
        optional = [
            (self.filled, f"search vectors filled {self.filled}"),
            (self.passage_files, f"passages files written {self.passage_files}"),
            (self.dropped, f"dropped {self.dropped}"),
            (self.buried, f"removed {len(self.buried)} forgotten entr{'y' if len(self.buried) == 1 else 'ies'} a merge brought back"),
            (self.index_rebuilt, f"index.json rebuilt ({self.index_rebuilt})"),
            (self.search_rebuilt, "search cache rebuilt"),
            (self.errors, f"{len(self.errors)} problem(s)"),
        ]
        parts += [text for shown, text in optional if shown]
        prefix = "full rebuild: " if self.full else "first sync: " if self.first else ""
        return prefix + ", ".join(parts) + f" ({self.seconds:.2f}s)"


# -- embeddings --------------------------------------------------------------------------------------
def _plan_vectors(layout: Layout, man: Manifest, scan: Scan, model: str, dim: int, full: bool, present: dict) -> tuple[list[str], dict[str, Seen], list[str]]:
    """(ids to embed, verified vector records, orphan embedding files to drop). `present`: the vector
    files' stats by id. `full`: embed all."""
    trusted = man.vectors if man.model == model else {}
    unreadable = {i for rec in scan.days.values() if rec.error for i in rec.entries or ()}  # kept, but cannot be embedded now
    need: list[str] = []
    verified: dict[str, Seen] = {}
    for entry_id, content_hash in scan.entries.items():
        sig, rec = present.get(entry_id), trusted.get(entry_id)
        now = Seen(sig, content_hash) if sig is not None and not full else None
        # the record of this stat and text says the file was checked; a file of another stat is read
        if now is not None and (
            now == rec or ((rec is None or rec.sig != now.sig) and vector_file_ok(layout.embedding_file(entry_id), model, dim, content_hash))
        ):
            verified[entry_id] = now
        elif entry_id not in unreadable:
            need.append(entry_id)
    bad_days = {n[:-5].replace("-", "") for n, rec in scan.days.items() if rec.error}  # entry ids carry their UTC day: ctx-YYYYMMDD-...
    orphans = [i for i in present if i not in scan.entries and i[len(C.ENTRY_ID_PREFIX) + 1 :][:8] not in bad_days]
    return need, verified, orphans


def _entries_for(layout: Layout, ids: list[str], scan: Scan) -> list[Entry]:
    """Entry objects for ids, parsing the day files not already read by the scan."""
    wanted = set(ids)
    for name, rec in sorted(scan.days.items()):
        if not rec.error and str(layout.index_dir / name) not in scan.parsed and wanted & (rec.entries or {}).keys():
            scan.parsed[str(layout.index_dir / name)] = (rec.sig, read_day(layout.index_dir / name))
    loaded = {e.id: e for _, entries in scan.parsed.values() for e in entries}
    return [loaded[i] for i in ids]


# -- the sync --------------------------------------------------------------------------------------
def sync(mem: Memory, full: bool = False, progress: Progress | None = None, batch: int = C.SYNC_EMBED_BATCH, fill: bool = True) -> SyncReport:
    """Bring index.json, embeddings and the search cache in line with the files. `full`: redo everything.
    `fill`: then embed the search cache's documents left without a vector (memtool/search/fill.py),
    a batch per transaction; else they are left to the background fill."""
    t0 = time.perf_counter()
    layout, store, embedder = mem.layout, mem.store, mem.embedder
    model, dim = embedder.model, embedder.dim
    report = SyncReport(model=model, full=full)
    report.buried = bury(layout, mem.settings.compressor)  # tombstones first: nothing forgotten is embedded or indexed again
    if report.buried:
        mem.invalidate()
    man = None if full else Manifest.load(layout)
    report.first = man is None
    man = man or Manifest()
    with store.lock():
        scan = scan_files(layout, man)
        report.entries, report.markdown = scan.entry_delta, scan.markdown_delta
        report.errors.extend(scan.errors)
        planned = layout.embeddings_stamp()
        if planned is not None and planned == man.emb_dir_ns and man.model == model:  # each vector file's stat by id: folders untouched since
            present = {i: r.sig for i, r in man.vectors.items()}  # the manifest's records
        else:
            present = {de.name[: -len(C.VECTOR_SUFFIX)]: sig for de in layout.embedding_files() if (sig := stat_sig(de.path))} if planned is not None else {}
        need, verified, orphans = _plan_vectors(layout, man, scan, model, dim, full, present)
        todo = _entries_for(layout, need, scan)
    if todo and embedder.reason is not None:  # the store's embedder cannot run here (WordsOnlyEmbedder)
        report.errors.append(
            f"{len(todo)} entries not embedded: this machine cannot run '{embedder.name}' ({embedder.reason}); "
            "a machine that can embeds them with its next `memory reindex`, and search finds them by their words"
        )
        todo = []
    fresh: dict = {}  # the vectors computed now, handed to the search cache (no read-back from JSON)
    for part, vectors, passages, paths in _embed(mem, layout, todo, batch):
        fresh.update(passages)
        fresh.update(zip(map(entry_vector_key, part), vectors))
        report.touched.extend(paths)
        verified.update((e.id, Seen(sig, e.content_hash())) for e in part if (sig := stat_sig(layout.embedding_file(e.id))))
        report.embedded += len(part)
        if progress:
            progress("embedding entries", report.embedded, len(todo))
    with store.lock():
        for entry_id in orphans:
            path = layout.embedding_file(entry_id)
            path.unlink(missing_ok=True)
            report.touched.append(path)
            report.dropped += 1
        stamp = layout.embeddings_stamp()
        # the folders as the plan found them when untouched since (not listed twice)
        listed = (
            set(present)
            if stamp == planned and not (report.embedded or report.dropped)
            else {de.name[: -len(C.VECTOR_SUFFIX)] for de in layout.embedding_files()}
        )
        keep_dir = stamp is not None and listed == set(verified)  # else rescan the folders next time
    # the scan's stats, taken before this sync read anything, are the search cache's signatures too
    days = source_key(layout, layout.index_dir)
    files = {f"{days}/{name}": str(rec.sig) for name, rec in scan.days.items()}
    files.update((rel, str(rec.sig)) for rel, rec in scan.markdown.items())
    # day files changed by content are read again even at the stat the store read them at: an edit within
    # the mtime tick of its last read (coarse mtimes, same size) leaves that stat, and the store only stats
    reread = [(f"{days}/{n}",) for n, rec in scan.days.items() if not report.first and rec.sha != getattr(man.days.get(n), "sha", "")]
    if reread:  # the search tables' record of them, and index.json's lines (memtool/index_json.py)
        reread_days = [(k[-15:-5],) for (k,) in reread]
        changes: list[tuple[str, Iterable[tuple]]] = [("UPDATE sources SET sig = '-' WHERE key = ?", reread)]
        changes.append(("UPDATE index_days SET sig = '-' WHERE day = ?", reread_days))
        write_state(layout, changes, create=False)
    report.search_rebuilt = _refresh_search(mem, full, progress, report, Known(scan.parsed, fresh, Sigs.take(layout, files)))
    with store.lock():  # index.json written whole from the store just refreshed, unless neither it nor a day file changed since the last sync
        index_sig = stat_sig(layout.index_file)
        if full or scan.days_changed or index_sig is None or index_sig != man.index_sig:
            written = write_index(layout, mem.settings.compressor, explain=True, parsed=scan.parsed, full=full)  # unreadable day files: the scan's
            report.errors += [written.not_written] if written.not_written else []
            why = written.why
            if why or full:
                report.index_rebuilt = "--full" if full else why
                report.touched.append(layout.index_file)
            index_sig = stat_sig(layout.index_file)
    new = Manifest(model=model, index_sig=index_sig, emb_dir_ns=stamp if keep_dir else None, days=scan.days, markdown=scan.markdown, vectors=verified)
    if scan.reread or new != man:  # nothing new: leave the manifest (and the disk) alone
        new.save(layout)
    if fill:
        step = (lambda done, total: progress("embedding documents", done, total)) if progress else None
        filled = fill_vectors(layout, embedder, step, from_end=True, every_file=True)
        report.filled, report.passage_files = filled.filled, filled.passage_files
        report.errors.extend(filled.errors)
    report.seconds = time.perf_counter() - t0
    return report


def _refresh_search(mem: Memory, full: bool, progress: Progress | None, report: SyncReport, known: Known) -> bool:
    """Bring the cache (memtool/search/build.py) up to date; whether it changed."""
    if progress and (full or report.changed):
        progress("updating the search cache", 0, 0)
    done = 0

    def step(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress("embedding Markdown and transcript chunks", done, 0)

    problems: list[str] = []
    changed = mem.cache.refresh_cache(mem.layout, mem.embedder, step, problems, known=known, full=full)
    seen = {_path_of(e) for e in report.errors}
    report.errors.extend(p for p in problems if _path_of(p) not in seen)  # the same bad files, reported once
    return changed


def reembed(mem: Memory, provider: str | None = None, progress: Progress | None = None) -> SyncReport:
    """`memory reembed` and MCP memory_reembed: the live store synced (a vector of another model or
    stale is computed again) and the archives' vectors too, which a sync never looks at. `provider`:
    the embedder `mem` was opened with, to switch the store to: it is tried on one text first (a
    missing key or a bad model fails here, the config untouched), then written to memory/config.yaml
    (`report.embedder_set`), so a running `memory watch` switches too."""
    from memtool.config import load, load_settings

    root = mem.layout.root
    written = ""
    if provider and load_settings(root, env={}).embedder != provider:
        mem.embedder.embed_documents(["memtool reembed probe"])
        written = persist_embedder(mem.layout, provider).relative_to(root).as_posix()
    overridden = ""
    if provider and load_settings(root).embedder != provider:  # load_settings names a setting an unapproved config may not make
        origin = load(root).origins["embedder"]
        if origin.startswith("environment"):
            overridden = f"{origin} ({load_settings(root).embedder}) overrides the config; searches will use it"
    report = sync(mem, progress=progress)
    report.embedder_set = written
    report.warnings += [overridden] if overridden else []
    archived = reembed_archive(mem, report.errors)
    report.embedded += len(archived)
    report.touched += archived
    return report


def reembed_archive(mem: Memory, errors: list[str] | None = None, batch: int = C.SYNC_EMBED_BATCH) -> list[Path]:
    """Embed the archived entries (memory/archive/YYYY/) whose vector is missing, stale or another
    model's, as `memory reembed` does for the live store after an embedder switch; a sync never looks
    at archives. An unreadable archived day file goes into `errors` (`memory doctor` mends it). Returns
    the embedding files written."""
    model, dim = mem.embedder.model, mem.embedder.dim
    written: list[Path] = []
    for lay in archive_layouts(mem.layout):
        todo = [e for e in Store(lay).iter_entries(errors) if not vector_file_ok(lay.embedding_file(e.id), model, dim, e.content_hash())]
        written += [path for *_, paths in _embed(mem, lay, todo, batch) for path in paths]
    return written


def _embed(mem: Memory, lay: Layout, todo: list[Entry], batch: int) -> Iterator[tuple[list[Entry], np.ndarray, dict, list[Path]]]:
    """(entries, their vectors, passage vectors computed on the way, files written) per batch of
    `todo`. One batch is written (mostly waiting on fsync, under the lock) while the next is embedded;
    on an error the batch in flight is still written whole, so a later run resumes after it."""
    store = Store(lay)

    def write(part: list[Entry], vectors: np.ndarray) -> list[Path]:
        with store.lock():
            return store.write_embeddings(part, mem.embedder.model, vectors)  # identical files are left alone

    with ThreadPoolExecutor(max_workers=1) as writer:
        pending = None
        for start in range(0, len(todo), batch):
            part = todo[start : start + batch]
            vectors, passages = entry_vectors(mem.embedder, part, kept_sessions(lay, part))
            if pending is not None:
                yield *pending[:3], pending[3].result()
            pending = (part, vectors, passages, writer.submit(write, part, vectors))
        if pending is not None:
            yield *pending[:3], pending[3].result()


def _path_of(problem: str) -> str:
    m = re.match(r"^(.+?\.(?:json|md))(?=[: ]|$)", problem)
    return m.group(1) if m else problem


def persist_embedder(layout: Layout, name: str) -> Path:
    """Set `embedder: <name>` in memory/config.yaml, keeping every other line (and comments) as is.
    The file stays approved (`memory config trust`) when it was, or when it set nothing that needs
    approval: the user named this embedder (memtool.config.keep_approval)."""
    from memtool.config import keep_approval, read_config

    path = layout.config_file
    before = read_config(path, follow_links=False).data
    text = before.decode("utf-8") if before is not None else ""
    line = f"embedder: {name}"
    pattern = re.compile(r"^embedder\s*:.*$", re.M)
    text, found = pattern.subn(line, text, count=1)
    if not found:
        text = text + ("" if not text or text.endswith("\n") else "\n") + line + "\n"
    atomic_write_text(path, text)
    keep_approval(path, before, text.encode("utf-8"))
    return path


__all__ = ["sync", "SyncReport", "persist_embedder", "reembed", "reembed_archive"]
