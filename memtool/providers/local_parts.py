"""The parts of a transcript the offline compressor reads: who said what, tool calls, and the
decisions and open items a session states.

`parts(text)` splits rendered transcripts (memtool.transcripts: "user: ...", "assistant: [tool X]
...", "tool: ...", "thinking: ...") and the Markdown agents export (`**User**:`, SpecStory's
`_**User (date)**_`, aider's `#### ` lines and `> ` output, fenced code, `<think>`) into Parts.
Only what people said (kind "said") feeds the summary, decisions and action items: a TODO inside a
file the agent printed, a quoted log line or a tool's output never becomes one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ROLE_ALIASES = {"human": "user", "ai": "assistant", "agent": "assistant", "model": "assistant", "gemini": "assistant"}
_ROLE_RE = re.compile(
    r"^(?:\*\*|_\*\*)?(user|human|assistant|agent|ai|model|gemini|summary|thinking|tool|system)\b"
    r"(?:\s*\([^)\n]*\))?(?:\*\*_?)?\s*:?\s*(?:\*\*_?)?\s*(?=\S|$)",
    re.I,
)
_TOOL_USE_RE = re.compile(r"^(?:\[tool [^\]]+\]|Tool use: \*\*|_?(?:Read|Edited|Ran|Searched|Listed) (?:file|`))", re.I)
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_THINK_RE = re.compile(r"<think>.*?</think>", re.S | re.I)
_HEADING_RE = re.compile(r"^\s*(?:#{1,6}\s+|\*\*)?(.{2,60}?)(?:\*\*)?\s*:?\s*$")
_UNDERLINE_RE = re.compile(r"^\s*(?:-{3,}|={3,})\s*$")
_AIDER_PROMPT_RE = re.compile(r"\(Y\)es/\(N\)o")  # aider's confirmation prompt, echoed with the user's answer
_AIDER_COMMAND_RE = re.compile(r"^\s*/([a-z-]+)(?:\s+|$)")  # "/add src/app.py"; "/ask …", "/code …", "/architect …" carry a message
_ITEM_RE = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+(?:\[( |x|X|~)\]\s*)?(.+)$")

# Headings and labels that open a list of decisions / of work left open.
DECISION_HEAD_RE = re.compile(r"^(?:key |final |main )?(?:decisions?(?: made| taken)?|decided|agreed|outcome|resolution)\b", re.I)
OPEN_HEAD_RE = re.compile(
    r"^(?:open (?:items?|questions|work|points)|follow[- ]?ups?|(?:still )?left(?: to do)?|(?:still )?open|remaining(?: work)?|next steps?|"
    r"to ?dos?|action items?|not done|outstanding|later|pending|what'?s left|left on\b.*|still to do)\b",
    re.I,
)
# Headings of the agent's report of what it changed: its items that say how things are now are choices made.
DONE_HEAD_RE = re.compile(
    r"^(?:done|changes?(?: made)?|what (?:i )?(?:changed|did)|summary(?: of changes)?|fix(?:ed)?|the fix|result|implemented)(?![\w-])", re.I
)
_SECTIONS = (("decision", DECISION_HEAD_RE), ("open", OPEN_HEAD_RE), ("done", DONE_HEAD_RE))
CHANGE_RE = re.compile(
    r"\b(?:now|instead of|rather than|->|→|switched|replaced|moved|pinned|set to|raised|lowered|maps? to|takes? an?|uses?|keeps?|stays?|only)\b", re.I
)
# A line that states one: "Decision: …", "TODO: …", "Left (TODO): …", "Follow-up: …".
DECISION_LINE_RE = re.compile(
    r"^\s*(?:[-*]\s*)?(?:\*\*)?(?:decision|decided|we decided|agreed|final decision|resolution)(?:\*\*)?\s*(?:\([^)]*\))?\s*[:\-–]\s*(?:\*\*)?\s*(.+)$", re.I
)
OPEN_LINE_RE = re.compile(
    r"^\s*(?:[-*]\s*)?(?:\*\*)?(?:todo|to do|left|left \(todo\)|follow[- ]?ups?|next steps?|action items?|open items?|still open|open|"
    r"remaining|next|pending|later)(?:\*\*)?\s*(?:\([^)]*\))?\s*[:\-–]\s*(?:\*\*)?\s*(.+)$",
    re.I,
)


_TAIL_HEAD_RE = re.compile(r"(?<=[.!] )([A-Za-z][\w ()'-]{2,40}):\s*$")
_EMPHASIS_RE = re.compile(r"\*\*|`|(?<![\w*])\*(?=[A-Za-z][\w -]{0,30}\*:)|(?<=[A-Za-z])\*(?=:)")  # bold, code, an *italic label*:


@dataclass(frozen=True)
class Part:
    role: str  # user | assistant | summary | speaker name | "" (unknown)
    kind: str  # said | tool | output | thinking | code
    text: str


def parts(text: str) -> list[Part]:
    """The transcript's paragraphs, each with who it is from and what kind of text it is."""
    text = _THINK_RE.sub("\n", text)
    out: list[Part] = []
    role, kind = "", "said"
    lines: list[str] = []
    fence = ""
    quoting = False  # inside aider's "> " output

    def flush():
        body = "\n".join(lines).strip()
        if body:
            out.append(Part(role, kind, body))
        lines.clear()

    for line in text.splitlines():
        if fence:  # inside a fenced block: code or a tool's output, never something said
            if line.strip().startswith(fence):
                fence = ""
                flush()
                kind = "said"
            else:
                lines.append(line)
            continue
        m = _FENCE_RE.match(line)
        if m:
            flush()
            fence, kind = m.group(1), "code"
            continue
        if line.startswith("#### "):  # aider: what the user typed
            flush()
            typed = line[5:]
            command = _AIDER_COMMAND_RE.match(typed)
            role, kind = "user", "said"
            name = command.group(1) if command else ""
            if command and name in ("run", "test", "git"):  # a shell command the user ran: "/run pytest -q", "/git log"
                kind, typed = "tool", f"[tool {name}] " + ("git " if name == "git" else "") + typed[command.end() :]
            elif _AIDER_PROMPT_RE.search(typed) or (command and name not in ("ask", "code", "architect")):
                kind = "output"  # an answer to aider's "Add file to the chat? (Y)es/(N)o…", a command ("/add src/app.py")
            elif command:
                typed = typed[command.end() :]  # "/ask how do I …": the question
            lines.append(typed)
            flush()
            role, kind, quoting = "assistant", "said", False  # aider's output after it is quoted anew
            continue
        if line.startswith("> "):  # aider's own output, a quote of a tool
            if not quoting:
                flush()
                kind, quoting = "output", True
            lines.append(line[2:])
            continue
        if quoting and line.strip():
            flush()
            kind, quoting = "said", False
        r = _ROLE_RE.match(line)
        if r and (line[r.end() : r.end() + 1] != "" or ":" in line[: r.end()] or "**" in line[: r.end()]):
            flush()
            label = ROLE_ALIASES.get(r.group(1).lower(), r.group(1).lower())
            rest = line[r.end() :]
            if label in ("thinking", "tool", "system"):
                kind = "thinking" if label == "thinking" else "output"
            else:  # user, assistant, summary
                role, kind = label, "tool" if rest.startswith("[tool ") else "said"
            if rest.strip():
                lines.append(rest)
            continue
        if _TOOL_USE_RE.match(line.strip()):
            flush()
            out.append(Part(role, "tool", line.strip()))
            continue
        if line.strip() in ("", "---"):  # a paragraph ends; a blank line ends a tool call or thinking too
            flush()
            if not line.strip() and kind in ("tool", "thinking"):
                kind = "said"
            continue
        lines.append(line)
    flush()
    return out


@dataclass
class Stated:
    """Decisions and open items a transcript states outright, in order."""

    decisions: list[str]
    open_items: list[str]
    changes: list[str]  # items of the agent's "Done:" report that say how things are now


def stated(ps: list[Part]) -> Stated:
    """Items under a Decisions / Open items heading (or a "Left on …:" line), and "Decision: …" /
    "TODO: …" lines; done items ("[x]") are left out."""
    found: dict[str, list[str]] = {"decision": [], "open": [], "done": []}
    for p in ps:
        if p.kind != "said":
            continue
        section = ""
        raw = p.text.splitlines()
        lines = [_EMPHASIS_RE.sub("", line) for line in raw]
        for i, line in enumerate(lines):
            bare = line.strip()
            if not bare or _UNDERLINE_RE.match(bare):
                continue
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            head = _HEADING_RE.match(bare)
            line_raw = raw[i].strip()  # "**Left to do**" alone on its line (the first line may have lost "**" to its role label)
            bold = line_raw.endswith("**") and (line_raw.startswith("**") or i == 0)
            is_heading = head and (bare.startswith("#") or bold or bare.endswith(":") or _UNDERLINE_RE.match(nxt))
            if head and is_heading and not _ITEM_RE.match(bare):
                title = head.group(1).strip(" *_#:")
                section = _section(title)
                if section or not _TAIL_HEAD_RE.search(bare):
                    continue
            tail = _TAIL_HEAD_RE.search(bare)  # "Good. Left to do:" before a list
            if tail and _ITEM_RE.match(nxt):
                section = _section(tail.group(1))
                if section:
                    continue
            item = _ITEM_RE.match(line)
            if item:
                if item.group(1) in ("x", "X"):
                    continue  # done
                body = item.group(2).strip()
                if section:  # of the agent's report of what it did, only what says how things are now
                    if section != "done" or (p.role != "user" and CHANGE_RE.search(body)):
                        found[section].append(body)
                    continue
            elif section and not line.startswith((" ", "\t")):
                section = ""  # a paragraph after the list ends it
            d = DECISION_LINE_RE.match(line)
            if d:
                found["decision"].append(d.group(1).strip())
                continue
            o = OPEN_LINE_RE.match(line)
            if o and len(o.group(1).split()) >= 2:
                found["open"].append(o.group(1).strip())
            elif section in ("decision", "open") and item is None and line.startswith((" ", "\t")) and found[section]:
                found[section][-1] += f" {bare}"  # a list item's wrapped line
    return Stated(found["decision"], found["open"], found["done"])


def _section(title: str) -> str:
    return next((name for name, head in _SECTIONS if head.match(title)), "")
