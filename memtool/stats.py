"""Numbers about a store, for `memory stats` (and the HTML report)."""

from __future__ import annotations

import os
from collections import Counter
from datetime import date

from memtool.memory import Memory
from memtool.store import DAY_RE


def _size(folder) -> int:
    total = 0
    for dirpath, _, files in os.walk(folder):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, f))
            except OSError:
                pass
    return total


def collect(mem: Memory) -> dict:
    layout = mem.layout
    errors: list[str] = []
    entries = list(mem.store.iter_entries(errors))
    embedded = {p.stem for p in layout.embeddings_dir.glob("*.json")} if layout.embeddings_dir.is_dir() else set()
    weeks: Counter = Counter()
    for e in entries:
        y, w, _ = date.fromisoformat(e.day).isocalendar()
        weeks[f"{y}-W{w:02d}"] += 1
    ratios = [e.tokens_original / max(e.tokens_compressed, 1) for e in entries]
    cache = layout.cache_dir
    return {
        "root": str(layout.root),
        "entries": len(entries),
        "days_with_entries": len({e.day for e in entries}),
        "daily_logs": sum(1 for p in layout.memory_dir.glob("*.md") if DAY_RE.match(p.stem)),
        "transcripts": len(list(layout.transcripts_dir.glob("*.md"))) if layout.transcripts_dir.is_dir() else 0,
        "pending_compression": sum(e.pending for e in entries),
        "pending_embeddings": sum(e.id not in embedded for e in entries),
        "mean_compression_ratio": round(sum(ratios) / len(ratios), 1) if ratios else 0.0,
        "tokens_original": sum(e.tokens_original for e in entries),
        "tokens_compressed": sum(e.tokens_compressed for e in entries),
        "importance": dict(Counter(e.importance for e in entries)),
        "top_topics": dict(Counter(t for e in entries for t in e.topics).most_common(10)),
        "entries_per_week": dict(sorted(weeks.items())),
        "store_bytes": _size(layout.memory_dir) - (_size(cache) if cache.is_dir() else 0),
        "cache_bytes": _size(cache) if cache.is_dir() else 0,
        "embedder": mem.embedder.model,
        "problems": errors,
    }
