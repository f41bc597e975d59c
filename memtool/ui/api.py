"""What the viewer's routes answer: each a thin call of the core use case the CLI calls, its result as plain JSON data. A
`Viewer` is the Memory and the day files already read (kept while a file's size and mtime stay the same: a page load
on a 10,000-entry store reads none again). Nothing here opens a file by a name a request gave: an entry id or a day is
checked against its pattern first and then handed to the core, which opens files through the root's confinement
(memtool/confine.py). Text is returned as data; the page shows it with textContent.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from memtool import confine
from memtool import constants as C
from memtool.dayfile import DAY_RE, ParsedDays, read_day
from memtool.errors import BadInput, NotFound, StoreCorrupt
from memtool.fsutil import stat_sig
from memtool.memory import Memory
from memtool.models import ID_RE, Entry
from memtool.search.docs import superseded_by
from memtool.search.engine import origin_label


@dataclass
class Viewer:
    mem: Memory
    parsed: ParsedDays = field(default_factory=dict)

    def entries(self, errors: list[str]) -> list[Entry]:
        """Every live entry of the project's root, as `Store.iter_entries` reads them."""
        return self._read(self.mem, errors)

    def every_entry(self, errors: list[str]) -> list[tuple[Entry, Memory]]:
        """Every live entry of the roots read together (the project's, its private part, the personal memory), each with its root."""
        return [(e, m) for m in self.mem.sources() for e in self._read(m, errors)]

    def _read(self, mem: Memory, errors: list[str]) -> list[Entry]:
        """A root's live entries; a day file unchanged since the last call is not read again."""
        out: list[Entry] = []
        for path in mem.layout.day_files():
            sig = stat_sig(path)  # taken first: a file changed while read is read again next time
            try:
                entries = read_day(path, self.parsed)
            except (StoreCorrupt, UnicodeDecodeError) as exc:
                errors.append(str(exc))
                continue
            self.parsed[str(path)] = (sig, entries)
            out.extend(entries)
        return out


KINDS = {"entry": ("entry", "transcript"), "log": ("log",), "memory": ("memory",), "": ("entry", "transcript", "log", "memory")}
WORD_RE = re.compile(r"\w{2,}")


def entry_id(value: str) -> str:
    if not ID_RE.fullmatch(value or ""):
        raise BadInput(f"{value!r:.60} is not an entry id (like ctx-20260207-1a2b3c4d)")
    return value


def _flag(params: Mapping[str, str], name: str) -> bool:
    return params.get(name, "") in ("1", "true", "on")


def _int(params: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = params.get(name, "")
    if not raw:
        return default
    if not re.fullmatch(r"[0-9]{1,12}", raw) or not low <= int(raw) <= high:
        raise BadInput(f"{name} must be a whole number from {low} to {high}")
    return int(raw)


# -- timeline ------------------------------------------------------------------------------------
def timeline(viewer: Viewer, params: Mapping[str, str]) -> dict:
    """The entries of every root read together (each labelled with its root), newest first, filtered
    (since/until: dates or periods as the CLI takes them, topic, importance: at least this, agent, trust:
    trusted/untrusted), and the project's daily logs of the period when no entry-only filter is set;
    one page of UI_PAGE items from `offset`."""
    from memtool.dates import parse_period

    start = parse_period(params["since"])[0].date().isoformat() if params.get("since") else ""
    end = parse_period(params["until"])[1].date().isoformat() if params.get("until") else ""  # exclusive
    topic, agent, trust = params.get("topic", "").casefold(), params.get("agent", ""), params.get("trust", "")
    importance = params.get("importance", "")
    if importance and importance not in C.IMPORTANCE_LEVELS:
        raise BadInput(f"importance must be one of {', '.join(C.IMPORTANCE_LEVELS)}")
    if trust not in ("", "trusted", "untrusted"):
        raise BadInput("trust must be trusted or untrusted")
    errors: list[str] = []
    mem, held = viewer.mem, viewer.every_entry(errors)
    entries = [e for e, _ in held]
    home = {e.id: m for e, m in held}
    topics = Counter(t for e in entries for t in e.topics)
    agents = sorted({e.agent for e in entries if e.agent})

    def keep(e: Entry) -> bool:
        return (
            (not start or e.day >= start)
            and (not end or e.day < end)
            and (not topic or topic in (t.casefold() for t in e.topics))
            and (not importance or C.IMPORTANCE_LEVELS.index(e.importance) >= C.IMPORTANCE_LEVELS.index(importance))
            and (not agent or e.agent == agent)
            and (not trust or e.trusted == (trust == "trusted"))
        )

    rows: list[tuple[str, str, Entry | None]] = [(e.timestamp, e.id, e) for e in entries if keep(e)]
    logs: dict[str, dict] = {}
    if not (topic or importance or agent or trust):
        for m in mem.sources():  # the daily logs of every root, each named by its day and its root
            for day in sorted(p.stem for p in m.layout.memory_dir.glob("*.md") if DAY_RE.fullmatch(p.stem)):
                if (not start or day >= start) and (not end or day < end):
                    ref = day + (f".{_root_key(m)}" if _root_key(m) else "")
                    logs[ref] = {"kind": "log", "id": ref, "day": day, "origin": m.origin, "private": m.private}
                    rows.append((f"{day}T23:59:59.999Z", ref, None))
    rows.sort(key=lambda r: (r[0], r[1]), reverse=True)
    offset = _int(params, "offset", 0, 0, 10**9)
    replaced = superseded_by(entries)
    shown = rows[offset : offset + C.UI_PAGE]
    items = [_entry_item(e, replaced, home[e.id]) if e else {**logs[key], "timestamp": ts} for ts, key, e in shown]
    return {
        "items": items,
        "total": len(rows),
        "offset": offset,
        "page": C.UI_PAGE,
        "topics": [t for t, _ in topics.most_common(200)],
        "agents": agents,
        "problems": errors,
    }


def _entry_item(e: Entry, replaced: dict[str, str], home: Memory) -> dict:
    keys = ("id", "timestamp", "summary", "topics", "importance", "agent", "trusted", "pinned", "source_session", "compression_ratio")
    where = {"origin": home.origin, "private": home.private}  # labelled as search labels it: personal, private
    return {"kind": "entry", "day": e.day, "superseded_by": replaced.get(e.id, ""), **where, **{k: getattr(e, k) for k in keys}}


def _root_key(m: Memory) -> str:
    """How a daily log's reference names the root that holds it: "" for the project's shared files,
    else "personal", "private" or "personal-private"."""
    return origin_label(m.origin, m.private).replace(", ", "-")


def daily_log(viewer: Viewer, ref: str) -> dict:
    """The daily log `ref` names, as text: its day (YYYY-MM-DD), in the project's files, or the day and
    the root that holds it ("2026-03-05.personal", as the timeline names it)."""
    day, _, key = (ref or "").partition(".")
    if not DAY_RE.fullmatch(day):
        raise BadInput(f"{ref!r:.40} is not a day (YYYY-MM-DD)")
    mem = next((m for m in viewer.mem.sources() if _root_key(m) == key), None)
    if mem is None:
        raise NotFound(f"no memory {key!r:.40} beside the project's (personal, private or personal-private)")
    problems: list[str] = []
    text = confine.read_optional_text(mem.layout.daily_log(day), C.MAX_DOC_BYTES, problems)
    if text is None:
        raise NotFound(problems[0] if problems else f"no daily log for {day}")
    return {"day": day, "text": text, "path": mem.layout.rel(mem.layout.daily_log(day)), "origin": mem.origin, "private": mem.private}


# -- search and context --------------------------------------------------------------------------
def search(viewer: Viewer, params: Mapping[str, str]) -> dict:
    """`memory search` with the same options, as the CLI builds its Query: hits as `--json` prints
    them, each with its text and passage cut into highlighted and plain runs."""
    from memtool.dates import parse_period
    from memtool.search.engine import Query

    mem, text = viewer.mem, params.get("q", "").strip()
    if not text:
        raise BadInput("give something to search for")
    importance, kind = params.get("importance") or None, params.get("kind", "")
    if importance and importance not in C.IMPORTANCE_LEVELS:
        raise BadInput(f"importance must be one of {', '.join(C.IMPORTANCE_LEVELS)}")
    if kind not in KINDS:
        raise BadInput("kind must be entry, log or memory")
    kinds = tuple(k for k in KINDS[kind] if not (_flag(params, "no_transcripts") and k == "transcript"))
    q = Query(
        text=text,
        limit=_int(params, "limit", mem.settings.search_limit, 1, 1000),
        kinds=kinds,
        since=parse_period(params["since"])[0] if params.get("since") else None,
        until=parse_period(params["until"])[1] if params.get("until") else None,
        topic=params.get("topic") or None,
        min_importance=importance,
        trusted_only=_flag(params, "trusted_only"),
        archive=_flag(params, "archive"),
    )
    found = mem.search(q)
    hits = [asdict(h) for h in found.hits]
    marks = [{"text": highlight(h["text"], text), "passage": highlight(h["passage"], text)} for h in hits]
    return {"hits": hits, "marks": marks, "warnings": found.warnings, "typo_fixes": found.typo_fixes}


def highlight(text: str, query: str) -> list[list]:
    """`text` as runs [piece, matched]: a word starting with a query word (any case) is matched."""
    words = sorted({w.casefold() for w in WORD_RE.findall(query)}, key=len, reverse=True)
    if not text or not words:
        return [[text, False]] if text else []
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\w*", re.I)
    out, at = [], 0
    for m in pattern.finditer(text):
        if m.start() > at:
            out.append([text[at : m.start()], False])
        out.append([m.group(0), True])
        at = m.end()
    if at < len(text):
        out.append([text[at:], False])
    return out


def context(viewer: Viewer, params: Mapping[str, str]) -> dict:
    """`memory context QUERY --budget N --json`: the bundle an agent would get, its tokens against the budget."""
    mem = viewer.mem
    budget = _int(params, "budget", mem.settings.budget, 1, 10**7) if params.get("budget") else None
    res = mem.context(params.get("q", "").strip() or None, budget=budget)
    return asdict(res)


# -- one entry -------------------------------------------------------------------------------------
def entry(viewer: Viewer, value: str) -> dict:
    """`memory show ID --json`, with its kept transcript and the entries it supersedes and that supersede it."""
    mem = viewer.mem
    shown = mem.show(entry_id(value))
    if shown is None:
        raise NotFound(f"no entry with id {value}. Search lists ids.")
    holder = mem.holder(shown.entry.id)  # the project's, its private part, or the personal memory
    problems: list[str] = []
    transcript, cut = None, False
    if shown.transcript is not None:
        transcript = confine.read_optional_text(shown.transcript, C.MAX_DOC_BYTES, problems)
        if transcript is not None and len(transcript) > C.UI_TRANSCRIPT_CHARS:
            transcript, cut = transcript[: C.UI_TRANSCRIPT_CHARS], True
    errors: list[str] = []
    others = {e.id: e for e, _ in viewer.every_entry(errors)}
    me = shown.entry
    return {
        "entry": me.to_dict(),
        "archived": shown.archived,
        "day_file": holder.layout.rel(shown.day_file),  # relative to the root holding it
        "origin": shown.origin,
        "private": shown.private,
        "transcript": transcript,
        "transcript_cut": cut,
        "supersedes": [_link(others.get(i), i) for i in me.supersedes],
        "superseded_by": [_link(e, e.id) for e in others.values() if me.id in e.supersedes and e.id != me.id],
        "problems": problems + errors,
    }


def _link(e: Entry | None, eid: str) -> dict:
    return {"id": eid, "summary": e.summary if e else "", "day": e.day if e else "", "live": e is not None}


def edit(viewer: Viewer, value: str, body: Any) -> dict:
    """`memory edit ID --summary ... --importance ...`: the fields in `body` (a JSON object)."""
    from memtool.edit import edit_entry

    if not isinstance(body, dict):
        raise BadInput("send the fields to change as a JSON object")
    return asdict(edit_entry(viewer.mem, entry_id(value), body))


def forget(viewer: Viewer, value: str) -> dict:
    """`memory forget ID --yes`, in the root that holds the entry."""
    from memtool.forget import forget as run

    mem, ids = viewer.mem, [entry_id(value)]
    home = mem.holder_of_all(ids)  # the project's, its private part, or the personal memory
    report = run(home.layout, ids, home.settings.compressor)
    home.invalidate()
    mem.invalidate()
    return asdict(report)


def archive(viewer: Viewer, value: str) -> dict:
    """`memory archive ID`, in the root that holds the entry."""
    from memtool.archive import archive_ids

    mem, ids = viewer.mem, [entry_id(value)]
    home = mem.holder_of_all(ids)
    report = archive_ids(home.layout, home.settings, ids)
    home.invalidate()
    mem.invalidate()
    return asdict(report)


def promote(viewer: Viewer, value: str, body: Any) -> dict:
    """`memory promote ID [--section S]`."""
    from memtool.promote import promote_entry

    mem, section = viewer.mem, body.get("section") if isinstance(body, dict) else None
    if section is not None and not isinstance(section, str):
        raise BadInput("section must be text")
    p = promote_entry(mem, entry_id(value), section or None)
    mem.invalidate()
    return {**asdict(p), "path": mem.layout.rel(p.path) if p.path.is_relative_to(mem.layout.root) else str(p.path)}


# -- pictures --------------------------------------------------------------------------------------
def pictures(viewer: Viewer) -> dict:
    """`memory stats --json`'s numbers (the project's root, as the command gives them) and what the
    charts draw from the entries of every root read together: sessions per week, the most named topics
    per week, compression ratios, and the people/systems graph of `memory entities` (names linked by the
    entries naming both)."""
    from memtool.entities import collect_entities
    from memtool.stats import collect, iso_week, ratio_histogram, week_series

    errors: list[str] = []
    d = collect(viewer.mem, viewer.entries(errors))
    entries = [e for e, _ in viewer.every_entry(errors)]
    d["problems"] = sorted(set(errors))
    weeks = week_series(dict(sorted(Counter(iso_week(e.day) for e in entries).items())))
    ratios = ratio_histogram([e.tokens_original / max(e.tokens_compressed, 1) for e in entries])
    found = collect_entities(entries, ("people", "systems", "topics"))
    top = [t.name for t in found["topics"][: C.UI_TOPIC_SERIES]]
    index = {w: i for i, (w, _) in enumerate(weeks)}
    series = {t: [0] * len(weeks) for t in top}
    for ent in found["topics"][: C.UI_TOPIC_SERIES]:
        for e in ent.entries:
            series[ent.name][index[iso_week(e.day)]] += 1
    nodes = sorted([*found["people"], *found["systems"]], key=lambda n: (-n.count, n.key))[: C.UI_GRAPH_NODES]
    named: dict[str, list[int]] = {}
    for i, n in enumerate(nodes):
        for e in n.entries:
            named.setdefault(e.id, []).append(i)
    links = Counter((a, b) for ids in named.values() for x, a in enumerate(ids) for b in ids[x + 1 :])
    return {
        "stats": d,
        "weeks": weeks,
        "topics": {"weeks": [w for w, _ in weeks], "series": series},
        "ratios": list(ratios.items()),
        "graph": {
            "nodes": [{"name": n.name, "kind": n.kind, "count": n.count} for n in nodes],
            "links": [{"a": a, "b": b, "n": k} for (a, b), k in links.most_common(C.UI_GRAPH_EDGES)],
        },
    }
