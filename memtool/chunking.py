"""Split Markdown (Layers 1 and 3) and transcripts into search-sized chunks.

Markdown is cut at headings, then at blank-line paragraphs; small neighbours are merged up to
CHUNK_TARGET_TOKENS and each chunk carries its heading path. Every chunk records the 1-based line
where it starts so a hit can point into the file.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from typing import Iterator

from memtool.constants import CHUNK_TARGET_TOKENS
from memtool.text import count_tokens

HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE_RE = re.compile(r"^\s*(```|~~~)")
COMMENT_RE = re.compile(r"<!--.*?-->", re.S)


@dataclass(frozen=True)
class Chunk:
    text: str
    line: int  # 1-based line of the first line of the chunk
    heading: str = ""  # "Parent > Child" heading path, empty at top level


def _blocks(text: str) -> list[tuple[int, str, str]]:
    """(start line, heading path, block text) for each paragraph; fenced code stays whole."""
    out: list[tuple[int, str, str]] = []
    path: list[tuple[int, str]] = []
    buf: list[str] = []
    start = 0
    in_fence = False

    def flush() -> None:
        body = "\n".join(buf).strip()
        if body:
            out.append((start, " > ".join(t for _, t in path), body))
        buf.clear()

    for no, line in enumerate(text.splitlines(), 1):
        fence = FENCE_RE.match(line) is not None
        if not in_fence and not fence:
            m = HEADING_RE.match(line)
            if m:
                flush()
                level = len(m.group(1))
                path = [(lv, t) for lv, t in path if lv < level] + [(level, m.group(2))]
                continue
            if not line.strip():
                flush()
                continue
        in_fence ^= fence
        if not buf:
            start = no
        buf.append(line)
    flush()
    return out


def uncommented(text: str) -> str:
    """HTML comments blanked outside fenced code, line numbers kept. A comment does not show in
    rendered Markdown (a log line's provenance tag, a note to editors), so it is neither searched
    nor shown: otherwise every line an agent logged would match a search for the agent's name."""
    if "<!--" not in text:
        return text
    lines = text.splitlines(keepends=True)
    in_code: list[bool] = []  # per line: inside fenced code, its fence lines included
    in_fence = False
    for line in lines:
        fence = FENCE_RE.match(line) is not None
        in_code.append(in_fence or fence)
        in_fence ^= fence
    runs = (("".join(line for _, line in run), code) for code, run in groupby(zip(in_code, lines), key=itemgetter(0)))
    return "".join(part if code else COMMENT_RE.sub(lambda m: "\n" * m[0].count("\n"), part) for part, code in runs)


def chunk_markdown(text: str, target: int = CHUNK_TARGET_TOKENS) -> list[Chunk]:
    return list(_merged(_blocks(uncommented(text)), target))


def chunk_at(text: str, line: int, target: int = CHUNK_TARGET_TOKENS) -> tuple[Chunk | None, int | None]:
    """The chunk of `chunk_markdown(text)` that starts at `line` (None if none does) and the line where the
    next one starts (None after the last). Counts only the blocks from the last change of heading path
    before `line` on: a chunk always starts there, so the chunks after it are those of the whole file."""
    blocks = _blocks(uncommented(text))
    at = bisect_left([start for start, _, _ in blocks], line)
    if at == len(blocks) or blocks[at][0] != line:  # a chunk starts with a block
        return None, None
    first = at
    while first and blocks[first - 1][1] == blocks[first][1]:
        first -= 1
    chunks = _merged(blocks[first:], target)
    for chunk in chunks:
        if chunk.line == line:
            return chunk, next((c.line for c in chunks), None)
        if chunk.line > line:
            break
    return None, None


def _merged(blocks: list[tuple[int, str, str]], target: int) -> Iterator[Chunk]:
    """Consecutive blocks under one heading path, merged up to `target` tokens."""
    cur: list[str] = []
    cur_line, cur_head, cur_tokens = 0, "", 0
    for line, head, body in blocks:
        tokens = count_tokens(body)
        if cur and (head != cur_head or cur_tokens + tokens > target):
            yield Chunk("\n\n".join(cur), cur_line, cur_head)
            cur, cur_tokens = [], 0
        if not cur:
            cur_line, cur_head = line, head
        cur.append(body)
        cur_tokens += tokens
    if cur:
        yield Chunk("\n\n".join(cur), cur_line, cur_head)


def chunk_lines(text: str, target: int = CHUNK_TARGET_TOKENS, overlap: int = 1) -> list[Chunk]:
    """Transcripts: consecutive lines (turns) grouped up to `target` tokens, `overlap` turns shared."""
    lines = [(no, ln) for no, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    cost = [count_tokens(ln) for _, ln in lines]
    chunks: list[Chunk] = []
    i = 0
    while i < len(lines):
        j, tokens = i, 0
        while j < len(lines) and (j == i or tokens + cost[j] <= target):
            tokens += cost[j]
            j += 1
        chunks.append(Chunk("\n".join(ln for _, ln in lines[i:j]), lines[i][0]))
        if j >= len(lines):
            break
        i = max(j - overlap, i + 1)
    return chunks
