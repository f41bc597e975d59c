"""Export entries (jsonl, csv, a Markdown digest). Backup and restore: memtool/backup.py."""

from __future__ import annotations

import csv
import io
import json
from typing import Iterable

from memtool import constants as C
from memtool.dayfile import sort_entries
from memtool.errors import BadInput
from memtool.models import Entry
from memtool.quoting import inline_code, no_headings


# -- export ------------------------------------------------------------------------------------------
def export_text(entries: Iterable[Entry], fmt: str) -> str:
    if fmt not in C.EXPORT_FORMATS:
        raise BadInput(f"--format must be one of {', '.join(C.EXPORT_FORMATS)}, got {fmt!r}")
    return {"jsonl": _jsonl, "csv": _csv, "md": _markdown}[fmt](sort_entries(entries))


def _jsonl(entries: list[Entry]) -> str:
    return "".join(json.dumps(e.to_dict(), ensure_ascii=False) + "\n" for e in entries)


def _csv(entries: list[Entry]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(C.EXPORT_CSV_COLUMNS)
    join = C.EXPORT_LIST_SEP.join
    for e in entries:
        writer.writerow(
            [e.timestamp, e.id, e.source_session, e.importance, e.summary, join(e.keywords), join(e.topics), join(e.decisions), join(e.action_items)]
        )
    return buf.getvalue()


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _markdown(entries: list[Entry]) -> str:
    lines = ["# Memory digest", ""]
    if not entries:
        return "\n".join([*lines, "No entries.", ""])
    lines += [f"{len(entries)} entries from {entries[0].day} to {entries[-1].day}. Times are UTC.", ""]
    day = None
    for e in entries:
        if e.day != day:
            day = e.day
            lines += [f"## {day}", ""]
        flags = "".join(f" · {f}" for f, on in (("pinned", e.pinned), ("pending", e.pending), ("untrusted", not e.trusted)) if on)
        lines += [f"### {e.timestamp[11:16]} · {inline_code(e.source_session)} · {e.importance}{flags}", "", no_headings(_one_line(e.summary)), ""]
        items = [f"- Decision: {_one_line(d)}" for d in e.decisions] + [f"- Action: {_one_line(a)}" for a in e.action_items]
        ents = e.entities.people + e.entities.systems
        if e.topics:
            items.append(f"- Topics: {', '.join(e.topics)}")
        if ents:
            items.append(f"- Names: {', '.join(ents)}")
        lines += [*items, "", f"`{e.id}` · {e.compression_ratio}", ""]
    return "\n".join(lines)
