"""`memory retry`: complete what a provider failure left behind.

Two kinds of work:
- pending entries: saved with the local compressor's stand-in because the provider failed. Their
  transcript was kept (memory/transcripts/YYYY-MM/<id>.md); it is compressed again and the entry's
  compressed fields are replaced in place (same id, timestamp, session and provenance), `pending`
  is cleared and the model recorded. Importance never goes down (the stand-in may carry the
  user's `--importance`).
- entries without an embedding file (the embedder failed when they were written): embedded with
  the configured embedder.

Provider calls run outside the lock. Each batch is written under the lock after re-reading its
entries, so an entry changed meanwhile (edited, or completed by another retry) is left alone.
A rate limit, timeout or unreachable server stops the run: the rest stay as they are, with the
same reason. A bad answer for one transcript leaves that entry pending and goes on.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable

from memtool import confine
from memtool import constants as C
from memtool.errors import BadModelOutput, ConfigError, DimensionMismatch, NotFound, ProviderError, StoreCorrupt, UnsafePath
from memtool.index_json import write_index
from memtool.models import Entities, Entry
from memtool.session_vectors import entry_vectors, kept_sessions

if TYPE_CHECKING:
    from memtool.memory import Memory
    from memtool.providers import Compressed

LOCAL = "local"
RETRY_BATCH = 32  # entries compressed / embedded before a write under the lock


@dataclass
class Failure:
    reason: str
    exit_code: int


@dataclass
class RetryReport:
    provider: str
    completed: dict[str, str] = field(default_factory=dict)  # pending entries completed -> model
    embedded: list[str] = field(default_factory=list)  # entries that got their vector
    skipped: list[str] = field(default_factory=list)  # changed by someone else meanwhile: left alone
    pending: dict[str, Failure] = field(default_factory=dict)  # still pending, and why
    unembedded: dict[str, Failure] = field(default_factory=dict)  # still without a vector, and why

    @property
    def ok(self) -> bool:
        return not self.pending and not self.unembedded

    @property
    def exit_code(self) -> int:
        first = next(iter([*self.pending.values(), *self.unembedded.values()]), None)
        return first.exit_code if first else 0

    def to_dict(self) -> dict:
        return {
            "provider": self.provider,
            "completed": self.completed,
            "embedded": self.embedded,
            "skipped": self.skipped,
            "still_pending": {k: v.reason for k, v in self.pending.items()},
            "still_unembedded": {k: v.reason for k, v in self.unembedded.items()},
            "ok": self.ok,
        }


def work(mem: "Memory") -> tuple[list[Entry], list[Entry]]:
    """(pending entries, entries that are not pending and have no embedding file)."""
    entries = list(mem.store.iter_entries())
    pending = [e for e in entries if e.pending]
    return pending, [e for e in entries if not e.pending and not mem.layout.embedding_file(e.id).is_file()]


def retry(mem: "Memory", provider: str | None = None, progress: Callable[[int], None] | None = None) -> RetryReport:
    """Complete pending entries with `provider` (default: the configured compressor) and embed
    entries that have no vector. `provider="local"` accepts the local stand-ins as final."""
    name = provider or mem.settings.compressor
    report = RetryReport(provider=name)
    pending, unembedded = work(mem)
    halt: Failure | None = None  # the compressor is unavailable: do not call it again in this run
    stop = _other_model(mem) if pending or unembedded else None  # the same for the embedder
    batches = [(True, pending[i : i + RETRY_BATCH]) for i in range(0, len(pending), RETRY_BATCH)]
    batches += [(False, unembedded[i : i + RETRY_BATCH]) for i in range(0, len(unembedded), RETRY_BATCH)]
    for completing, batch in batches:
        done = [(e, e) for e in batch]
        if completing:
            done, halt = _complete(mem, name, provider is None, batch, report, halt)
        stop = _save(mem, done, report, stop, completing=completing)
        if progress:
            progress(len(batch))
    return report


def _other_model(mem: "Memory") -> Failure | None:
    """A reason not to embed when the stored vectors come from another model: never mix models."""
    model = mem.embedder.model
    for file in mem.layout.embedding_files():
        try:
            stored = (mem.store.read_embedding(file.name[: -len(C.VECTOR_SUFFIX)]) or {}).get("model")
        except StoreCorrupt:
            continue  # `memory doctor` reports it; look at another file
        if stored and stored != model:
            return Failure(
                f"the store's vectors come from '{stored}' but the configured embedder is '{model}'; run `memory reembed` first (a store never mixes models)",
                DimensionMismatch.exit_code,
            )
        return None
    return None


def _complete(
    mem: "Memory", name: str, by_default: bool, batch: list[Entry], report: RetryReport, halt: Failure | None
) -> tuple[list[tuple[Entry, Entry]], Failure | None]:
    """(stand-in, completed entry) for each entry of the batch the provider could compress, and
    the failure that should stop further compression, if any."""
    if name == LOCAL and not by_default:
        return [(e, replace(e, pending=False)) for e in batch], halt
    if halt is None and name == LOCAL:  # the configured compressor made the stand-ins: nothing better to offer
        halt = Failure(
            "the configured compressor is 'local', which made this stand-in. Run `memory retry --provider gemini` "
            "(or set compressor: gemini in memory/config.yaml), or `memory retry --provider local` to keep the local summary.",
            ConfigError.exit_code,
        )
    if halt is None:
        try:
            compressor = mem.compressor(name)
        except ProviderError as exc:
            halt = Failure(f"not tried: {exc}", exc.exit_code)
    if halt is not None:
        report.pending.update({e.id: halt for e in batch})
        return [], halt
    done: list[tuple[Entry, Entry]] = []
    for n, entry in enumerate(batch):
        path = mem.layout.transcript_file(entry.id)
        try:
            text = confine.read_bytes(path, C.MAX_DOC_BYTES).decode("utf-8", errors="replace")
            out = compressor.compress(text)
        except FileNotFoundError:
            report.pending[entry.id] = Failure(
                f"its transcript {path.relative_to(mem.layout.root)} is gone, so there is nothing to compress again. "
                "`memory retry --provider local` keeps the local summary.",
                NotFound.exit_code,
            )
            continue
        except (UnsafePath, ProviderError) as exc:  # UnsafePath: a link out of the root, a FIFO, too large: never sent to a provider
            report.pending[entry.id] = Failure(str(exc), exc.exit_code)
            if isinstance(exc, (UnsafePath, BadModelOutput)):  # about this transcript only: go on with the others
                continue
            halt = Failure(f"not tried: {exc}", exc.exit_code)  # quota, timeout, server down: the others would fail the same way
            report.pending.update({e.id: halt for e in batch[n + 1 :]})
            break
        done.append((entry, completed(entry, out, compressor.model, text)))
    return done, halt


def completed(old: Entry, out: "Compressed", model: str, text: str) -> Entry:
    """The stand-in with its compressed fields replaced by the provider's output."""
    levels = C.IMPORTANCE_LEVELS
    importance = max(old.importance, out.importance, key=levels.index) if out.importance in levels else old.importance
    lists: dict[str, Any] = {key: list(getattr(out, key)) for key in ("keywords", "topics", "decisions", "action_items")}
    new = replace(old, summary=out.summary, entities=out.entities or Entities(), importance=importance, model=model, pending=False, **lists)
    new.count_tokens(text)
    return new


def _save(mem: "Memory", pairs: list[tuple[Entry, Entry]], report: RetryReport, stop: Failure | None, *, completing: bool) -> Failure | None:
    """Embed the new versions, then write them under the lock if their stored version is still the
    old one. Returns the embedder failure that should stop further embedding, if any."""
    if not pairs:
        return stop
    vectors = None
    if stop is None:
        try:
            news = [new for _, new in pairs]
            vectors, _ = entry_vectors(mem.embedder, news, kept_sessions(mem.layout, news))
        except (ProviderError, DimensionMismatch) as exc:
            stop = Failure(f"embedding failed: {exc}", exc.exit_code)
    with mem.store.lock():
        changed: list[Entry] = []
        for i, (old, new) in enumerate(pairs):
            if mem.store.get(old.id) != old or (not completing and mem.layout.embedding_file(old.id).is_file()):
                report.skipped.append(old.id)
                continue
            if vectors is not None:
                mem.store.write_embedding(new, mem.embedder.model, vectors[i], replace=True)  # the stand-in's vector goes
                report.embedded.append(new.id)
            else:
                report.unembedded[new.id] = stop  # type: ignore[assignment]
                if completing:  # the stand-in's vector: gone, so the next retry embeds the new text
                    mem.layout.embedding_file(new.id).unlink(missing_ok=True)
            if completing:
                changed.append(new)
                report.completed[new.id] = new.model
        if changed:
            mem.store.update_entries(changed)
            write_index(mem.layout, mem.settings.compressor)
            if not mem.settings.keep_transcripts:
                for e in changed:
                    mem.layout.transcript_file(e.id).unlink(missing_ok=True)
                    mem.layout.passages_file(e.id).unlink(missing_ok=True)
    mem.invalidate()
    return stop
