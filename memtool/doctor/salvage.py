"""Saving what can be saved from a damaged file, and the quarantine that keeps the original.

A day file cut off by a crash keeps every whole entry before the cut; one holding git conflict
markers keeps the entries of both sides. Whatever `memory doctor --fix` cannot keep as it is goes to
memory/quarantine/<timestamp>/: nothing is ever deleted.
"""

from __future__ import annotations

import json
import os
import re
from functools import cached_property
from pathlib import Path

from memtool.confine import safe_folder
from memtool.errors import StorageError, StoreCorrupt
from memtool.fsutil import atomic_write_bytes
from memtool.models import Entry, utcnow
from memtool.store import Layout

ENTRIES_RE = re.compile(r'"entries"\s*:\s*\[\s*')
SEPARATOR_RE = re.compile(r"\s*,?\s*")
# a conflict: <<<<<<< ours [||||||| base] ======= theirs >>>>>>> (each marker: the first 7 characters of a line)
HUNK_RE = re.compile(r"^<{7}[^\n]*\n(.*?)^(?:\|{7}[^\n]*\n.*?^)?={7}[^\n]*\n(.*?)^>{7}[^\n]*(?:\n|\Z)", re.M | re.S)


class Quarantine:
    """memory/quarantine/<UTC timestamp>/..., created on first use."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self.moved: list[str] = []

    @cached_property
    def folder(self) -> Path:
        """memory/quarantine/<timestamp>[-n], one not there yet (not even as a dangling link)."""
        stamp = utcnow().strftime("%Y%m%dT%H%M%SZ")
        folder, n = self.layout.quarantine_dir / stamp, 1
        while os.path.lexists(folder):
            n += 1
            folder = self.layout.quarantine_dir / f"{stamp}-{n}"
        return folder

    def move(self, path: Path) -> None:
        dest = self.folder / path.relative_to(self.layout.memory_dir)
        try:
            safe_folder(dest.parent, create=True)  # memory/quarantine reached without a link (memtool/confine.py)
            os.replace(path, dest)
        except OSError as exc:
            raise StorageError(f"cannot move {path} into {self.folder}: {exc.strerror}") from None
        self.moved.append(dest.relative_to(self.layout.root).as_posix())

    def copy(self, path: Path) -> None:
        """Keep a copy of `path` (written and fsynced) before it is rewritten in place: a crash then
        leaves the original either in place or here, never nowhere."""
        self.write(path.relative_to(self.layout.memory_dir), path.read_bytes())

    def write(self, relative: str | Path, data: str | bytes) -> None:
        dest = self.folder / relative
        atomic_write_bytes(dest, data.encode("utf-8") if isinstance(data, str) else data)
        self.moved.append(dest.relative_to(self.layout.root).as_posix())


def salvage(text: str) -> dict[str, Entry]:
    """Every entry that parses in a damaged day file's text (both sides of a conflict), by id, the first of each."""
    kept: dict[str, Entry] = {}
    for side in conflict_sides(text) or (text,):
        for e in _entries_of(side):
            kept.setdefault(e.id, e)
    return kept


def conflict_sides(text: str) -> tuple[str, str] | None:
    """The two versions of a file holding git conflict markers (diff3 base sections dropped); None when
    it holds none, or a conflict that does not end."""
    if not HUNK_RE.search(text) or re.search(r"^<{7}", HUNK_RE.sub("", text), re.M):
        return None
    return HUNK_RE.sub(r"\1", text), HUNK_RE.sub(r"\2", text)


def parse_entries(data: object) -> list[Entry]:
    """The entries of a parsed day (or index) document that are valid; the others are skipped."""
    items = data.get("entries") if isinstance(data, dict) else data
    out = []
    for item in items if isinstance(items, list) else []:
        try:
            out.append(Entry.from_dict(item))
        except StoreCorrupt:
            continue  # this one stays only in the quarantined original
    return out


def _entries_of(text: str) -> list[Entry]:
    """The valid entries of a day file's text; when it is damaged (cut off, say), every whole entry
    before the damage."""
    try:
        return parse_entries(json.loads(text))
    except (json.JSONDecodeError, RecursionError):  # RecursionError: brackets nested thousands deep
        pass
    start = ENTRIES_RE.search(text)
    decoder, items, pos = json.JSONDecoder(), [], start.end() if start else len(text)
    while pos < len(text):
        try:
            item, pos = decoder.raw_decode(text, pos)
        except (json.JSONDecodeError, RecursionError):
            break
        items.append(item)
        pos = SEPARATOR_RE.match(text, pos).end()
    return parse_entries(items)
