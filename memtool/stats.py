"""Numbers about a store, for `memory stats` (and the HTML report)."""

from __future__ import annotations

import os
from collections import Counter
from contextlib import suppress
from datetime import date, timedelta
from statistics import median

from memtool import constants as C
from memtool.dayfile import DAY_RE
from memtool.entities import collect_entities
from memtool.memory import Memory
from memtool.models import Entry

SPARK = "▁▂▃▄▅▆▇█"


def _size(folder) -> int:
    total = 0
    for dirpath, _, files in os.walk(folder):
        for f in files:
            with suppress(OSError):  # removed meanwhile
                total += os.path.getsize(os.path.join(dirpath, f))
    return total


def collect(mem: Memory, entries: list[Entry] | None = None) -> dict:
    """The numbers; `entries`: the store's entries when the caller has read them already (`memory ui`)."""
    layout = mem.layout
    errors: list[str] = []
    entries = list(mem.store.iter_entries(errors)) if entries is None else entries
    embedded = {de.name[: -len(C.VECTOR_SUFFIX)] for de in layout.embedding_files()}
    weeks = Counter(iso_week(e.day) for e in entries)
    ratios = [e.tokens_original / max(e.tokens_compressed, 1) for e in entries]
    cache_bytes = _size(layout.cache_dir)  # 0 when there is none: os.walk yields nothing
    found = collect_entities(entries)
    return {
        "root": str(layout.root),
        "entries": len(entries),
        "days_with_entries": len({e.day for e in entries}),
        "daily_logs": sum(1 for p in layout.memory_dir.glob("*.md") if DAY_RE.match(p.stem)),
        "transcripts": sum(1 for _ in layout.transcript_files()),
        "pending_compression": sum(e.pending for e in entries),
        "pending_embeddings": sum(e.id not in embedded for e in entries),
        "mean_compression_ratio": round(sum(ratios) / len(ratios), 1) if ratios else 0.0,
        "tokens_original": sum(e.tokens_original for e in entries),
        "tokens_compressed": sum(e.tokens_compressed for e in entries),
        "importance": dict(Counter(e.importance for e in entries)),
        "top_topics": dict(Counter(t for e in entries for t in e.topics).most_common(10)),
        "entries_per_week": dict(sorted(weeks.items())),
        "store_bytes": _size(layout.memory_dir) - cache_bytes,
        "cache_bytes": cache_bytes,
        "embedder": mem.embedder.model,
        "problems": errors,
        "first_day": min((e.day for e in entries), default=""),
        "last_day": max((e.day for e in entries), default=""),
        "median_compression_ratio": round(median(ratios), 1) if ratios else 0.0,
        "compression_ratio_range": [round(min(ratios), 1), round(max(ratios), 1)] if ratios else [0.0, 0.0],
        "compression_ratio_histogram": ratio_histogram(ratios),
        "entities": {kind: len(ents) for kind, ents in found.items()},
        "top_people": {e.name: e.count for e in found["people"][: C.STATS_TOP_SHOWN]},
        "top_systems": {e.name: e.count for e in found["systems"][: C.STATS_TOP_SHOWN]},
    }


def iso_week(day: str) -> str:
    """The ISO week of a day (YYYY-MM-DD), as the stats name it: 2026-W10."""
    y, w, _ = date.fromisoformat(day).isocalendar()
    return f"{y}-W{w:02d}"


def ratio_histogram(ratios: list[float]) -> dict[str, int]:
    """Entries per compression-ratio bucket, every bucket present, in order: '<2:1', '2-5:1', ..., '>=100:1'."""
    edges = C.RATIO_BUCKETS
    labels = [f"<{edges[0]}:1", *(f"{a}-{b}:1" for a, b in zip(edges, edges[1:])), f">={edges[-1]}:1"]
    counts = dict.fromkeys(labels, 0)
    for r in ratios:
        counts[labels[sum(r >= e for e in edges)]] += 1
    return counts


def week_series(per_week: dict[str, int]) -> list[tuple[str, int]]:
    """entries_per_week with the empty weeks in between filled in with 0, oldest first."""
    if not per_week:
        return []
    day, last = (date.fromisocalendar(int(week[:4]), int(week[6:]), 1) for week in (min(per_week), max(per_week)))  # their Mondays
    out = []
    while day <= last:
        key = "{}-W{:02d}".format(*day.isocalendar()[:2])
        out.append((key, per_week.get(key, 0)))
        day += timedelta(weeks=1)
    return out


def sparkline(values: list[int]) -> str:
    """One block character per value, scaled to the largest; a zero is a space."""
    top = max(values, default=0)
    return "".join(" " if v <= 0 else SPARK[min(len(SPARK) - 1, (v * len(SPARK) - 1) // top)] for v in values)


def human_bytes(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    size = n / 1024
    for unit in ("KiB", "MiB"):
        if size < 1024:
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"
