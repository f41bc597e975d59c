"""Tombstones: the ids `memory forget` removed, kept in memory/index/tombstones.jsonl (one JSON
object a line: id, time, who), versioned and merged by line (`merge=union`), so a merge with an
older copy of the store never brings a forgotten entry back: a sync (`memory reindex`, or the
first search after a pull) and the merge driver drop tombstoned ids wherever they reappear."""

from __future__ import annotations

import getpass
import json
import subprocess
from pathlib import Path

from memtool import confine
from memtool import constants as C
from memtool.fsutil import append_text
from memtool.models import ID_RE, iso, utcnow


def tombstones_file(root: Path) -> Path:
    return root / C.MEMORY_DIR / C.INDEX_DIR / C.TOMBSTONES_FILE


def read_tombstones(root: Path) -> dict[str, dict]:
    """Forgotten id -> its first tombstone. Lines that are not a tombstone (a hand edit, a merge
    marker) are skipped: a tombstone only ever removes, so a bad line can only keep an entry."""
    try:
        return parse_tombstones(confine.read_text(tombstones_file(root), errors="replace"))
    except FileNotFoundError:
        return {}


def parse_tombstones(text: str) -> dict[str, dict]:
    """read_tombstones for the text of a tombstones file."""
    out: dict[str, dict] = {}
    for line in text.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and isinstance(item.get("id"), str) and ID_RE.fullmatch(item["id"]):
            out.setdefault(item["id"], item)
    return out


def who(root: Path) -> str:
    """Who forgets: the git identity of the clone (user.email, else user.name), else the login name."""
    for key in ("user.email", "user.name"):
        try:
            out = subprocess.run(["git", "config", key], cwd=root, capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            break
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "unknown"


def add_tombstones(root: Path, ids: list[str]) -> None:
    """Append a tombstone for each id not already buried. Caller holds the root's lock."""
    have = read_tombstones(root)
    name, when = who(root), iso(utcnow())
    lines = "".join(json.dumps({"id": i, "time": when, "who": name}, ensure_ascii=False) + "\n" for i in ids if i not in have)
    if lines:
        append_text(tombstones_file(root), lines.rstrip("\n"))
