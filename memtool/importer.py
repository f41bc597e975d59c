"""`memory import`: the sessions the coding agents already keep on disk for a project
(memtool.agent_history), compressed into its memory.

An imported session is stored as the agent hooks store one at its end (`memory compress <transcript>
--session <agent session id> --agent <agent>`): the agent's transcript file read by the one loader,
dated by its own timestamps, redacted by compress_many, with the agent's session id as the entry's
`source_session` and the agent's name as its `agent`. A session is held when a live or archived entry
has that pair, or when the entry it would give was forgotten (a tombstone): it is skipped, so
importing twice, or after the hooks stored a session, stores nothing again. Sessions are compressed
oldest first and written in small batches, so an import that is stopped keeps what it wrote and the
next run goes on from there. A transcript that cannot be read is reported and skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from memtool import constants as C
from memtool.agent_history import AGENTS, FoundSession, find_sessions
from memtool.errors import BadInput
from memtool.memory import Memory, Session, check_session
from memtool.models import Entry, make_id
from memtool.store import Store, archive_layouts
from memtool.tombstones import read_tombstones
from memtool.transcripts import load_transcript


@dataclass(frozen=True)
class AgentSummary:
    """What was found of one agent: sessions, those not held yet, bytes of the new ones, and when the sessions began."""

    agent: str
    sessions: int
    new: int
    new_bytes: int
    first: datetime | None
    last: datetime | None

    def to_dict(self) -> dict:
        days = {key: when.date().isoformat() if when else None for key, when in (("first", self.first), ("last", self.last))}
        return {"agent": self.agent, "sessions": self.sessions, "new": self.new, "new_bytes": self.new_bytes} | days


@dataclass
class ImportPlan:
    """The sessions found, oldest first, and which of them memory holds already."""

    project: Path
    all_projects: bool
    found: list[FoundSession]
    held: list[FoundSession]
    todo: list[FoundSession]
    warnings: list[str] = field(default_factory=list)  # day files that could not be read for the held check

    def by_agent(self) -> list[AgentSummary]:
        out = []
        for agent in dict.fromkeys(s.agent for s in self.found):
            mine, new = [s for s in self.found if s.agent == agent], [s for s in self.todo if s.agent == agent]
            times = sorted(started(s) for s in mine)
            out.append(AgentSummary(agent, len(mine), len(new), sum(s.size for s in new), times[0], times[-1]))
        return out

    def to_dict(self) -> dict:
        return {
            "project": str(self.project),
            "all_projects": self.all_projects,
            "agents": [a.to_dict() for a in self.by_agent()],
            "held": len(self.held),
            "todo": [_ref(s) for s in self.todo],
        }


@dataclass
class ImportResult:
    """What an import did: the entries it stored, the sessions compress found already stored (the same
    transcript under another session id), those whose entry was forgotten, those it could not read
    (with why), and what reading and compress worked around."""

    stored: list[tuple[FoundSession, Entry]] = field(default_factory=list)
    repeats: list[FoundSession] = field(default_factory=list)
    forgotten: list[FoundSession] = field(default_factory=list)
    failed: list[tuple[FoundSession, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "stored": [_ref(s) | {"id": e.id, "timestamp": e.timestamp} for s, e in self.stored],
            "repeats": [_ref(s) for s in self.repeats],
            "forgotten": [_ref(s) for s in self.forgotten],
            "failed": [_ref(s) | {"error": why} for s, why in self.failed],
            "warnings": self.warnings,
        }


def _ref(s: FoundSession) -> dict:
    return {"agent": s.agent, "session_id": s.session_id, "path": str(s.path), "size": s.size}


def started(s: FoundSession) -> datetime:
    """When a found session began: its transcript's first timestamp, else its file's modification time."""
    return s.started or datetime.fromtimestamp(s.modified, timezone.utc)


def held_sessions(mem: Memory, errors: list[str]) -> set[tuple[str, str]]:
    """(agent, source_session) of every live and archived entry; unreadable day files go to `errors`."""
    stores = [mem.store, *(Store(arch) for arch in archive_layouts(mem.layout))]
    return {(e.agent, e.source_session) for store in stores for e in store.iter_entries(errors)}


def plan_import(mem: Memory, project: Path, agents: Iterable[str] = AGENTS, since: datetime | None = None, all_projects: bool = False) -> ImportPlan:
    """The sessions of `agents` that ran in `project` (all projects: every one), changed at `since` or
    later, oldest first; those memory holds by agent and session id are set apart."""
    agents = list(dict.fromkeys(agents))
    unknown = [a for a in agents if a not in AGENTS]
    if unknown:
        raise BadInput(f"unknown agent {unknown[0]!r}: choose from {', '.join(AGENTS)}")
    found = sorted(find_sessions(project, agents, since, all_projects), key=lambda s: (started(s), s.agent, s.session_id))
    errors: list[str] = []
    held = held_sessions(mem, errors)
    is_held = [(s.agent, mem.redact(s.session_id)) in held for s in found]  # stored redacted, as compress_many stores it
    return ImportPlan(
        project,
        all_projects,
        found,
        [s for s, h in zip(found, is_held) if h],
        [s for s, h in zip(found, is_held) if not h],
        [f"skipped: {message}; `memory doctor` shows how to mend it" for message in errors],
    )


def run_import(mem: Memory, plan: ImportPlan, progress: Callable[[FoundSession], None] | None = None, batch: int = C.IMPORT_BATCH) -> ImportResult:
    """Compress the plan's sessions not held yet, oldest first, each dated by its own transcript.
    `progress` is called with each session once it is compressed, skipped or found unreadable. The
    entries are written every `batch` sessions: a run stopped midway loses at most that many, which
    the next run compresses."""
    result = ImportResult(warnings=list(plan.warnings))
    tombstoned = read_tombstones(mem.layout.root)
    given: list[FoundSession] = []  # in the order compress_many receives them (one entry each)

    def sessions() -> Iterator[Session]:
        for i, found in enumerate(plan.todo):
            if i and progress:
                progress(plan.todo[i - 1])  # compress_many asks for the next session once it has compressed this one
            try:
                session = _read(mem, found, result.warnings)
            except BadInput as exc:
                result.failed.append((found, str(exc)))
                continue
            except OSError as exc:
                result.failed.append((found, f"{found.path}: cannot read: {exc.strerror or exc}"))
                continue
            if tombstoned and session.when and make_id(session.when, mem.redact(session.text)) in tombstoned:  # the id compress_many would give it
                result.forgotten.append(found)
                continue
            given.append(found)
            yield session
        if plan.todo and progress:
            progress(plan.todo[-1])

    stored = mem.compress_many(sessions(), batch=batch)
    result.warnings += stored.warnings
    for i, (found, entry) in enumerate(zip(given, stored.entries)):
        if i in stored.repeats:
            result.repeats.append(found)
        else:
            result.stored.append((found, entry))
    return result


def _read(mem: Memory, found: FoundSession, warnings: list[str]) -> Session:
    """The session of one found transcript, checked as compress checks it (BadInput when it cannot be stored)."""
    transcript = load_transcript(found.path, mem.settings.max_transcript_bytes)
    warnings += transcript.warnings
    text = mem.check_text(transcript.render(), str(found.path))
    session = Session(text=text, when=transcript.started or started(found), session=found.session_id, agent=found.agent, name=str(found.path))
    check_session(session)
    return session
