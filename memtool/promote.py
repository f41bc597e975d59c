"""`memory promote`: lift an insight into MEMORY.md (Layer 3) under a `## Section`.

MEMORY.md is written by people, so the edit is surgical: one bullet line is inserted at the end of
the section (the section is appended if missing) and every other byte of the file stays as it was,
line endings included. Headings inside fenced code blocks are not sections. Promoting the same
insight twice adds nothing. The promoted entry records where it went (`promoted_to`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memtool import confine
from memtool import constants as C
from memtool.errors import BadInput, NotFound
from memtool.fsutil import atomic_write_bytes
from memtool.index_json import write_index
from memtool.memory import Memory
from memtool.models import Entry

ENTRY_ID_RE = re.compile(rf"^{C.ENTRY_ID_PREFIX}-\d{{8}}-[0-9a-f]{{8}}$")
H2_RE = re.compile(r"^ {0,3}##[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")  # ATX level-2 heading
ANY_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]|$)")
FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
BULLET_RE = re.compile(r"^\s*[-*+]\s+(.*)$")
PROVENANCE_RE = re.compile(r"\s*\((?:from [^()]*|\d{4}-\d{2}-\d{2})\)\s*$")  # what promote appends
NEW_FILE = "# MEMORY\n"


@dataclass
class Promotion:  # fields in the order `memory promote --json` prints them
    added: bool  # False when the insight was already in MEMORY.md
    path: Path
    section: str
    bullet: str  # the line written (or found), without its line ending
    entry_id: str = ""


def _shorten(text: str, limit: int = C.PROMOTE_MAX_CHARS) -> str:
    """One line of at most `limit` characters, cut at a sentence end or a word boundary."""
    text = " ".join(text.split()).removeprefix("- ")
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    end = max(head.rfind(". "), head.rfind("! "), head.rfind("? "))
    if end > limit // 2:
        return head[: end + 1]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip(" ,;:") + "…"


def _norm(text: str) -> str:
    return " ".join(PROVENANCE_RE.sub("", text).split()).casefold().rstrip(".…")


def _lines(text: str) -> list[str]:
    """Lines with their endings, split on \\n only, so that joining them gives back the exact text."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def _body(line: str) -> str:
    return line.rstrip("\r\n")


@dataclass
class _Section:
    name: str
    start: int  # index of the heading line
    end: int  # index one past the last line of the section


def _outline(lines: list[str]) -> tuple[list[_Section], list[tuple[int, str]]]:
    """The `## ` sections (each ends where the next heading of level 1 or 2 starts) and the bullets
    (line index, text), outside fenced code blocks."""
    heads: list[int] = []
    bullets: list[tuple[int, str]] = []
    fence = ""
    for i, raw in enumerate(lines):
        line = _body(raw)
        m = FENCE_RE.match(line)
        if fence:  # a closing fence: the same character, at least as long, nothing after it
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)) :].strip():
                fence = ""
        elif m:
            fence = m.group(1)
        elif (h := ANY_HEADING_RE.match(line)) and len(h.group(1)) <= 2:
            heads.append(i)
        elif b := BULLET_RE.match(line):
            bullets.append((i, b.group(1)))
    ends = [*heads[1:], len(lines)]
    return [_Section(m.group(1).strip(), start, end) for start, end in zip(heads, ends) if (m := H2_RE.match(_body(lines[start])))], bullets


def insert_bullet(text: str, section: str, bullet: str) -> str:
    """`text` with `bullet` appended at the end of `## section` (created at the end if missing)."""
    lines = _lines(text)
    eol = "\r\n" if text.count("\r\n") * 2 > text.count("\n") else "\n"
    target = next((s for s in _outline(lines)[0] if s.name.casefold() == section.casefold()), None)
    if target is None:
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += eol
        if lines and _body(lines[-1]).strip():
            lines.append(eol)
        lines += [f"## {section}{eol}", eol, f"{bullet}{eol}"]
        return "".join(lines)
    last = next((i for i in range(target.end - 1, target.start, -1) if _body(lines[i]).strip()), target.start)  # its last non-blank line
    if not lines[last].endswith("\n"):
        lines[last] += eol
    lines[last + 1 : last + 1] = [eol] * (last == target.start) + [f"{bullet}{eol}"]  # an empty section keeps a blank line under its heading
    return "".join(lines)


def _canonical_section(name: str) -> str:
    name = " ".join(name.split()).lstrip("#").strip()
    if not name:
        raise BadInput("--section must name a section, e.g. 'Key decisions'")
    if "\n" in name or len(name) > 80:
        raise BadInput("--section must be a short one-line name")
    return name


def _write(mem: Memory, insight: str, provenance: str, section: str, entry: Entry | None) -> Promotion:
    path = mem.layout.root / C.MEMORY_MD
    with mem.store.lock():
        try:
            data = confine.read_bytes(path, C.MAX_DOC_BYTES)  # a linked MEMORY.md is followed to a file of its name only
        except FileNotFoundError:
            data = NEW_FILE.encode("utf-8")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadInput(f"{path}: not UTF-8 (byte {exc.start}); fix the file before promoting into it") from None
        sections, bullets = _outline(_lines(text))
        at, entry_id = next((i for i, b in bullets if _norm(b) == _norm(insight)), None), entry.id if entry else ""
        if at is not None:  # already there: named by the section holding it (`section` when it is outside any)
            result = Promotion(False, path, next((s.name for s in sections if s.start < at < s.end), section), f"- {insight}", entry_id)
        else:
            bullet = f"- {insight} ({provenance})"
            match = next((s.name for s in sections if s.name.casefold() == section.casefold()), section)
            atomic_write_bytes(path, insert_bullet(text, match, bullet).encode("utf-8"))
            result = Promotion(True, path, match, bullet, entry_id)
        if entry is not None and entry.promoted_to != f"{C.MEMORY_MD}#{result.section}":
            entry.promoted_to = f"{C.MEMORY_MD}#{result.section}"
            mem.store.update_entries([entry])
            write_index(mem.layout, mem.settings.compressor)
    return result


def promote_entry(mem: Memory, entry_id: str, section: str | None = None) -> Promotion:
    """Promote an entry's first decision (or its summary) into MEMORY.md."""
    entry = mem.get(entry_id.strip())
    if entry is None:
        raise NotFound(f"no entry with id {entry_id}. `memory search` lists ids.")
    if not entry.trusted:
        raise BadInput(
            f"entry {entry.id} came from untrusted input (tool output, web pages); MEMORY.md is read as trusted "
            "guidance, so it is not promoted. Promote the insight in your own words instead (pass it as TEXT)."
        )
    insight = _shorten(entry.decisions[0] if entry.decisions else entry.summary)
    if not insight:
        raise BadInput(f"entry {entry.id} has no summary or decision to promote")
    default = C.PROMOTE_DECISIONS_SECTION if entry.decisions else C.PROMOTE_CONTEXT_SECTION
    return _write(mem, insight, f"from {entry.id}, {entry.day}", _canonical_section(section or default), entry)


def promote_text(mem: Memory, text: str, section: str | None = None, today: datetime | None = None) -> Promotion:
    """Promote a piece of text (redacted first) into MEMORY.md."""
    insight = _shorten(mem.redact(text))
    if not insight:
        raise BadInput("nothing to promote: the text is empty")
    day = f"{(today or datetime.now()):%Y-%m-%d}"
    return _write(mem, insight, day, _canonical_section(section or C.PROMOTE_CONTEXT_SECTION), None)


def promote(mem: Memory, target: str, section: str | None = None) -> Promotion:
    """An entry id promotes that entry; anything else is promoted as text."""
    if ENTRY_ID_RE.match(target.strip()):
        return promote_entry(mem, target, section)
    return promote_text(mem, target, section)
