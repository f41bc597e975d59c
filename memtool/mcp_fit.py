"""Fitting MCP answers to a token cap (offline count, `memtool.text.count_tokens`).

An answer is the JSON-able dict a tool returns; `render` is the text the client shows the model.
`fit` makes an answer render within a cap by dropping trailing items and shortening long strings,
never touching strings that name something (ids, paths: `KEEP_WHOLE`), so an id in an answer can
always be passed back to a tool. Error messages and resources are capped here too: `brief`
shortens an argument echoed in a message, `capped_message` caps a whole message, `log_tail`
keeps the newest lines of a log and `file_head` the first sections of a hand-edited file.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from itertools import accumulate
from typing import Any, Iterator

from memtool.chunking import FENCE_RE, HEADING_RE
from memtool.errors import BadInput
from memtool.text import count_tokens, truncate_to_tokens

# Keys whose strings (and lists of strings) are never shortened: ids, paths and our own notes.
KEEP_WHOLE = frozenset(
    {"id", "root", "note", "kind", "timestamp", "truncated", "path", "warning", "superseded_by", "included", "dropped", "entry_id", "transcript", "logged_to"}
)
NOTE_RESERVE = 80  # tokens kept free for the truncation note
MIN_STRING_TOKENS = 8  # a string is not cut shorter than this
ECHO_CHARS = 40  # an argument echoed in a message is cut to this many characters
ERROR_RESERVE = 20  # tokens the SDK adds around an error message ("Error executing tool NAME: ")
HEAD_BOUNDARY_SHARE = 0.5  # a file head ends at a section (else a paragraph) when that keeps this share of what fits


def render(answer: dict[str, Any]) -> str:
    """The text a client shows the model: indented JSON, readable Unicode (as the SDK sends it)."""
    return json.dumps(answer, ensure_ascii=False, indent=2)


def tokens(answer: dict[str, Any]) -> int:
    return count_tokens(render(answer))


def add_note(answer: dict[str, Any], *notes: str) -> None:
    """answer["note"]: the `notes` that are not empty, joined with '; ' (none: no note)."""
    if note := "; ".join(n for n in notes if n):
        answer["note"] = note


def brief(value: str, chars: int = ECHO_CHARS) -> str:
    """An argument as echoed in a message: its start, and its length when it was longer."""
    return value if len(value) <= chars else f"{value[:chars]}… ({len(value)} characters)"


def capped_message(message: str, args: dict[str, Any], cap: int) -> str:
    """An error message fit for the client: long string arguments it echoes shortened, then cut to `cap`."""
    for value in sorted((v for v in args.values() if isinstance(v, str) and len(v) > ECHO_CHARS), key=len, reverse=True):
        message = message.replace(repr(value), repr(brief(value))).replace(value, brief(value))
    return truncate_to_tokens(message, cap - ERROR_RESERVE)


def _string_leaves(node: Any) -> Iterator[tuple[Any, Any, str]]:
    """(holder, key, text) of every string that may be shortened: none under a KEEP_WHOLE key."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        if isinstance(key, str) and key in KEEP_WHOLE:
            continue
        if isinstance(value, str):
            yield node, key, value
        else:
            yield from _string_leaves(value)


def fit(answer: dict[str, Any], cap: int, items_key: str = "") -> None:
    """Make `answer` render within `cap` tokens, in place. Drops trailing items of answer[items_key]
    first (at least one is kept), then shortens the longest strings, then drops items again. Raises
    BadInput if even the strings kept whole do not fit."""
    if tokens(answer) <= cap:
        return
    answer["truncated"] = True
    before = answer.get("note", "")
    answer["note"] = before
    room = cap - NOTE_RESERVE
    items: list[Any] = answer[items_key] if isinstance(answer.get(items_key), list) else []
    listed = len(items)
    while len(items) > 1 and tokens(answer) > room:
        items.pop()
    while (over := tokens(answer) - room) > 0:
        cands = [(len(text), holder, key, text) for holder, key, text in _string_leaves(answer) if count_tokens(text) > MIN_STRING_TOKENS]
        if not cands:
            break
        _, holder, key, text = max(cands, key=lambda c: c[0])
        have = count_tokens(text)
        shown = count_tokens(json.dumps(text, ensure_ascii=False))  # rendered, its escapes (\n, \") cost tokens too
        holder[key] = truncate_to_tokens(text, max(MIN_STRING_TOKENS, (shown - over) * have // shown - 2))
    parts = [f"answer cut to fit max_tokens={cap}"]
    if len(items) < listed:
        parts.append(f"{listed - len(items)} more {items_key} left out (ask again with a larger max_tokens or a smaller limit)")
    parts.append("text ending in '…' was shortened")
    add_note(answer, before, *parts)
    while items and tokens(answer) > cap:  # long unshortenable fields: give up items
        items.pop()
    if tokens(answer) > cap:
        raise BadInput(f"the answer does not fit max_tokens={cap} even cut down (its ids and paths alone are longer); ask with a larger max_tokens")


def leading_within(items: list[str], room: int, separator: int = 0) -> int:
    """How many leading items fit in `room` tokens as rendered JSON strings (escapes counted), each
    costing `separator` tokens more. A string's quotes cost as much as the "\\n" joining two lines."""
    used = accumulate(count_tokens(json.dumps(item, ensure_ascii=False)) + separator for item in items)
    return next((i for i, total in enumerate(used) if total > room), len(items))


def log_tail(text: str, cap: int, name: str) -> str:
    """A log within `cap` tokens: its heading line and its newest lines, saying what was left out.
    A newest line too long to fit on its own keeps its end."""
    if count_tokens(text) <= cap:
        return text
    lines = text.splitlines()
    head = [lines.pop(0), ""] if lines and lines[0].startswith("# ") else []

    def note(left: int, partial: bool) -> str:
        what = f"{left} earlier lines" + (" and the start of the newest line" if partial else "")
        return f"(… {what} of {name} left out to fit max_tokens={cap}; the newest lines follow)"

    room = cap - sum(count_tokens(h) for h in head) - count_tokens(note(len(lines), True)) - 2
    kept: list[str] = []
    while lines and count_tokens("\n".join([lines[-1], *kept])) <= room:
        kept.insert(0, lines.pop())
    partial = not kept and bool(lines)
    if partial:  # the newest line alone is over the cap: keep its end
        kept = ["…" + _tail_chars(lines.pop(), room - 1)]
    return "\n".join([*head, note(len(lines), partial), "", *kept]) + "\n"


def _tail_chars(text: str, limit: int) -> str:
    """The longest end of `text` within `limit` tokens (a binary search on its start)."""
    return text[bisect_left(range(len(text)), True, key=lambda start: count_tokens(text[start:]) <= limit) :]


def file_head(text: str, cap: int, name: str) -> str:
    """A hand-edited Markdown file (MEMORY.md) within `cap` tokens: its first lines, ending before a
    heading (else at a blank line, else after any line) when that keeps at least HEAD_BOUNDARY_SHARE
    of what fits, then a note saying what was left out and how to read on (memory_get NAME#L<line>,
    which reads the file from that line). A first line too long to fit on its own keeps its start."""
    total = count_tokens(text)
    if total <= cap:
        return text
    lines = text.splitlines()
    n = len(lines)

    def note(first: int, rest: int, partial: bool = False) -> str:
        what = (f"the end of line 1{f' and lines 2-{n}' if n > 1 else ''}" if partial else f"lines {first}-{n}") + f" of {n} (about {rest} tokens)"
        return (
            f"(… {name} is cut here to fit max_tokens={cap}: {what} left out. memory_get with id '{name}#L{first}' "
            f"reads on from line {first}; memory_search finds what it says on a topic)"
        )

    room = cap - max(count_tokens(note(n, total)), count_tokens(note(1, total, True))) - 2  # numbers at their largest
    fits = next((i for i, used in enumerate(accumulate(count_tokens(line) + 1 for line in lines)) if used > room), n)
    while fits and count_tokens("\n".join(lines[:fits])) > room:
        fits -= 1
    if not fits:
        head = truncate_to_tokens(lines[0], room)
        return head + "\n\n" + note(1, total - count_tokens(head) + 1, True) + "\n"
    end = _boundary(lines, fits)
    first = next((i for i in range(end, n) if lines[i].strip()), end)  # 0-based: the first line left out
    head = "\n".join(lines[:end]).rstrip()
    return head + "\n\n" + note(first + 1, total - count_tokens(head)) + "\n"


def _boundary(lines: list[str], fits: int) -> int:
    """Where to end a head of `lines` when the first `fits` fit: before the last heading (outside fenced
    code), else at the last blank line, among lines 1..fits, if that keeps HEAD_BOUNDARY_SHARE of them."""
    heading = blank = 0  # the last of each, 0: none (line 0 never counts)
    in_fence = False
    for i, line in enumerate(lines[: fits + 1]):
        if FENCE_RE.match(line):
            in_fence = not in_fence
        elif not in_fence and i:
            if HEADING_RE.match(line):
                heading = i
            elif not line.strip():
                blank = i
    least = fits * HEAD_BOUNDARY_SHARE
    return next((found for found in (heading, blank) if found and found >= least), fits)
