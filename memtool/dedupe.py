"""Duplicates: a session compressed again, or one nearly the same as a stored one.

The policy, on the transcript as it would be stored (after redaction):

* **same** - byte-identical to the kept transcript of a live entry: nothing is stored; the existing
  entry is returned, reported as a duplicate.
* **near** - the Jaccard of the two transcripts' content words (`text.content_words`) is at least
  `DEDUPE_JACCARD`, both hold at least `DEDUPE_MIN_WORDS` words besides speaker labels (a note of a
  few words is never "near"), the stored entry is dated within `DEDUPE_WINDOW_DAYS` of the new
  session, the new transcript states every number the stored one does, and the two do not carry
  different explicit session names (`--session`): a bot's templated runs share every word, but
  'build 41' against 'build 42', or two session ids, tell them apart. The new entry is stored with
  `supersedes: [that id]` (the most similar; the newest on a tie), so search shows it first and
  marks the older one: typically a session compressed again after a small change.
* **continued** - no near duplicate, but a stored entry within the window is the beginning of this
  session: its kept transcript is a prefix of the new one (a transcript file that grew), or it has
  the same explicit session name (as the agent hooks pass the agent's session id, never the default
  'main') and at least `DEDUPE_CONTAINMENT` of its content words are in the new transcript (a long
  resumed session shares too few words for "near"). The new entry supersedes it (the most contained
  one, then the longest, then the newest), and `memory context` shows only the newer.

Only kept transcripts are compared: entries compressed with `--no-transcript` never match.
Distinct conversations between the same people stay far below the threshold (docs/benchmarks.md: LoCoMo).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import cached_property

from memtool import confine
from memtool import constants as C
from memtool.dayfile import id_day, read_day
from memtool.errors import BadInput, StoreCorrupt, UnsafePath
from memtool.models import Entry, parse_iso
from memtool.store import Layout, Store, get_archived
from memtool.text import SPEAKER_ROLES, content_words


@dataclass
class Duplicate:
    """What compress found for one session: `same` (nothing stored) or `near` (stored, superseding)."""

    name: str  # the session's file name, for messages
    kind: str  # "same" | "near" | "continued"
    entry: Entry  # the stored entry it repeats
    similarity: float  # Jaccard of content words (1.0 for "same"); for "continued", the share of the stored one's in the new
    new: str = ""  # id of the entry stored for a "near" duplicate

    @property
    def existing(self) -> str:
        return self.entry.id

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "existing": self.existing, "similarity": round(self.similarity, 4), "new": self.new}

    def message(self) -> str:
        if self.kind == "same":
            return f"{self.name}: the same transcript is already stored as {self.existing}; nothing added"
        if self.kind == "continued":
            share = f"{self.similarity:.0%} of its content words are here"
            return f"{self.name}: continues the session stored as {self.existing} ({share}); stored {self.new} superseding it"
        return f"{self.name}: nearly the same session as {self.existing} ({self.similarity:.0%} of content words shared); stored {self.new} superseding it"


NUMBER_RE = re.compile(r"\d+(?:[.,:/-]\d+)*")  # numbers a transcript states ('41', '3.5', '2026-02-10'): a near duplicate states them all again
Words = tuple[frozenset[str], frozenset[str]]  # a transcript's content words, and the numbers it states


def stored_bytes(text: str) -> bytes:
    """The bytes `Store.write_transcripts` writes for this text."""
    return (text if text.endswith("\n") else text + "\n").encode("utf-8", "surrogatepass")


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def comparable(words: frozenset[str]) -> bool:
    """Enough content words for a Jaccard to mean something: speaker labels alone never do."""
    return len(words - SPEAKER_ROLES) >= C.DEDUPE_MIN_WORDS


class Deduper:
    """Finds the stored entry a new session repeats. Reads lazily: transcript sizes for the exact
    check, and only the day files inside the window for the near check."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self.store = Store(layout)
        self.window = timedelta(days=C.DEDUPE_WINDOW_DAYS)
        self._words: dict[str, Words | None] = {}  # entry id -> the content words and numbers of its transcript
        self._days: dict[str, list[Entry]] = {}  # day -> live entries (day files read so far)
        self._added: dict[str, tuple[Entry, bytes]] = {}  # entries of this call, not yet on disk
        self._added_days: dict[str, list[Entry]] = {}  # the same, by UTC day (the near check reads a window)
        self._last: tuple[str, Words | None] | None = None  # the last text _comparable read, and its answer

    def check(self, name: str, text: str, when: datetime, session: str = "") -> Duplicate | None:
        """The stored entry this (redacted) transcript repeats or continues, or None when the session
        is new. `session`: the session's name; an explicit one (not the default) links a resumed session."""
        data = stored_bytes(text)
        same = self._same(data)
        if same is not None:
            return Duplicate(name, "same", same, 1.0)
        mine = self._comparable(text)
        if mine is None:
            return None
        words, nums = mine
        near: tuple[float, str, Entry] | None = None
        continued: tuple[float, int, str, Entry] | None = None
        lo, hi = C.DEDUPE_JACCARD * len(words), len(words) / C.DEDUPE_JACCARD  # Jaccard <= smaller / larger size
        named = session if session and session != C.DEFAULT_SESSION else None
        for e in self._near_candidates(when):
            theirs = self._words_of(e)
            if theirs is None:
                continue
            other, other_nums = theirs
            if lo <= len(other) <= hi and other_nums <= nums and not (named and e.source_session not in (named, C.DEFAULT_SESSION)):
                score = jaccard(words, other)
                if score >= C.DEDUPE_JACCARD and (near is None or (score, e.timestamp) > near[:2]):
                    near = (score, e.timestamp, e)
            if near is None and len(other) <= len(words):
                covered = len(words & other) / len(other)
                if covered >= C.DEDUPE_CONTAINMENT and (e.source_session == named or (covered == 1.0 and self._begins(e, data))):
                    key = (covered, len(other), e.timestamp)
                    if continued is None or key > continued[:3]:
                        continued = (*key, e)
        if near is not None:
            return Duplicate(name, "near", near[2], near[0])
        return Duplicate(name, "continued", continued[3], continued[0]) if continued else None

    def add(self, entry: Entry, text: str) -> None:
        """An entry stored by this call: later sessions of the same call are compared with it too."""
        data = stored_bytes(text)
        self._added[entry.id] = (entry, data)
        self._added_days.setdefault(entry.day, []).append(entry)
        self._words[entry.id] = self._comparable(text)
        self._sizes.setdefault(len(data), []).append(entry.id)

    def require_known(self, ids: list[str]) -> None:
        """Ids a session declares it supersedes must name stored entries (live or archived)."""
        for i in ids:
            if i not in self._added and self.store.get(i) is None and get_archived(self.layout, i) is None:
                raise BadInput(f"--supersedes {i}: no entry with this id. `memory search` lists ids.")

    # -- internals -----------------------------------------------------------------------------------
    @cached_property
    def _sizes(self) -> dict[int, list[str]]:
        """Transcript size in bytes -> entry ids."""
        from memtool.search.read import transcript_sizes  # numpy: only when a check runs

        sizes: dict[int, list[str]] = {}
        for eid, size in transcript_sizes(self.layout).items():
            sizes.setdefault(size, []).append(eid)
        return sizes

    def _same(self, data: bytes) -> Entry | None:
        for eid in self._sizes.get(len(data), []):
            if self._kept(eid) == data:
                entry = self._added[eid][0] if eid in self._added else self._live(eid)
                if entry is not None:  # an orphan transcript (no live entry) is not a stored memory
                    return entry
        return None

    def _begins(self, entry: Entry, data: bytes) -> bool:
        """Whether the entry's kept transcript is where `data` (a longer transcript) starts."""
        kept = self._kept(entry.id)
        return kept is not None and data.startswith(kept)

    def _kept(self, entry_id: str) -> bytes | None:
        """An entry's kept transcript (this call's, or the stored one); None when it has none, or one memtool
        does not read (memtool/confine.py)."""
        if entry_id in self._added:
            return self._added[entry_id][1]
        try:
            return confine.read_bytes(self.layout.transcript_file(entry_id), C.MAX_DOC_BYTES)
        except (FileNotFoundError, UnsafePath):
            return None

    def _live(self, entry_id: str) -> Entry | None:
        named = id_day(entry_id)
        return next((e for e in self._day(named) if e.id == entry_id), None) if named else None

    def _day(self, day: str) -> list[Entry]:
        """A day file's live entries, read once; a missing or unreadable one counts as empty (doctor
        reports it; compress must not fail for a file it does not write)."""
        if day not in self._days:
            try:
                self._days[day] = read_day(self.layout.day_file(day))
            except (FileNotFoundError, StoreCorrupt, UnicodeDecodeError):
                self._days[day] = []
        return self._days[day]

    def _near_candidates(self, when: datetime) -> list[Entry]:
        """Live entries (and this call's) dated within the window; day files are named by UTC day."""
        when = when if when.tzinfo else when.astimezone()
        lo, hi = when - self.window, when + self.window
        out: list[Entry] = []
        day, last = lo.astimezone(timezone.utc).date(), hi.astimezone(timezone.utc).date()
        while day <= last:
            key = day.isoformat()
            out.extend(self._day(key))
            stored = {e.id for e in self._day(key)}
            out.extend(e for e in self._added_days.get(key, ()) if e.id not in stored)
            day += timedelta(days=1)
        return [e for e in out if lo <= parse_iso(e.timestamp) <= hi]

    def _words_of(self, entry: Entry) -> Words | None:
        if entry.id not in self._words:
            kept = self._kept(entry.id)
            self._words[entry.id] = None if kept is None else self._comparable(kept.decode("utf-8", errors="replace"))
        return self._words[entry.id]

    def _comparable(self, text: str) -> Words | None:
        """The content words and numbers of a transcript, or None when too few to compare (decided once
        per entry: the near check meets each stored entry again for every session of its week; and
        once per session: `add` after `check` of the same text reads the last answer)."""
        if self._last is not None and self._last[0] is text:
            return self._last[1]
        words = frozenset(content_words(text))
        out = (words, frozenset(NUMBER_RE.findall(text))) if comparable(words) else None
        self._last = (text, out)
        return out


__all__ = ["Deduper", "Duplicate", "comparable", "jaccard", "stored_bytes"]
