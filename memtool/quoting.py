"""Text memtool did not write, embedded where it cannot pass for structure.

Metadata values (session names, agents, sources, titles) and untrusted text reach the session-start
bundle, MCP answers and the daily log's provenance comments. Each helper here makes one kind of
embedding safe: a value on one line (no line breaks, no control characters), the same as inline code
(nothing in it renders as Markdown), a line that cannot start a heading, and a value inside an HTML
comment that cannot close it (percent-encoded, read back with `comment_tags`), and text printed to a
terminal that cannot drive it (`terminal_safe`: no escape sequence from a file sets a window title or
clears the screen).
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import quote, unquote

TAG_SAFE = "[]:/@+,;()"  # kept as typed in a log line's tag values, beside letters, digits and _.-~ (no space, <, >, %, = or quote)
META_MAX_CHARS = 120  # a metadata value is cut to this many characters where it is embedded
TAG_COMMENT_RE = re.compile(r"<!-- ((?:[a-z_]+=[^\s<>]* ?)+)-->")  # a log line's provenance tags, as `log_tag_comment` writes them
HEADING_START_RE = re.compile(r"^( {0,3})(#)", re.MULTILINE)  # a line CommonMark would read as an ATX heading
LOG_TITLE_RE = re.compile(r"# \d{4}-\d{2}-\d{2}")  # a daily log's first line, as memtool writes it
# What a terminal would act on rather than show: C0 controls but tab and newline (ESC starts every
# escape sequence, BEL ends OSC ones, a lone CR rewrites the line), DEL, the C1 controls (U+009B is
# an 8-bit CSI) and the bidirectional overrides and isolates (text shown in another order than stored).
TERMINAL_UNSAFE_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]|\r(?!\n)")


def one_line(value: str, limit: int = META_MAX_CHARS) -> str:
    """`value` on one line: every run of whitespace (line and paragraph separators included) becomes
    one space, other control and format characters are dropped, and it is cut to `limit` characters."""
    text = " ".join(str(value).split())
    text = "".join(ch for ch in text if unicodedata.category(ch)[0] != "C")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def terminal_safe(text: str) -> str:
    """`text` as it may be printed to a terminal: each character the terminal would act on
    (TERMINAL_UNSAFE_RE) shown as its escape, `\\x1b` or `\\u202e`; newlines, tabs and every other
    character kept. For what the CLI prints, not for --json (JSON escapes control characters itself)."""
    if text.isprintable():
        return text
    return TERMINAL_UNSAFE_RE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)


def inline_code(value: str, limit: int = META_MAX_CHARS) -> str:
    """`value` as Markdown inline code on one line: rendered literally (no heading, link, HTML or
    emphasis). Backticks inside become single quotes, so the span cannot be closed early."""
    text = one_line(value, limit).replace("`", "'")
    return f"`{text}`" if text else "`-`"


def no_headings(text: str) -> str:
    """`text` with every line that would start a Markdown heading escaped (`\\#`)."""
    return HEADING_START_RE.sub(r"\1\\\2", text)


def log_tag_comment(tags: dict[str, str]) -> str:
    """The provenance comment closing a daily log line: `<!-- source=... agent=... -->`. Values are
    percent-encoded (letters, digits and `_.-~[]:/@+,;()` stay as they are, so a `[REDACTED:...]` mark
    still reads as one), so no value can close the comment, start a new line or hide the next one."""
    body = " ".join(f"{k}={quote(one_line(v, 10 * META_MAX_CHARS), safe=TAG_SAFE)}" for k, v in tags.items() if v)
    return f"<!-- {body} -->"


def comment_tags(text: str) -> dict[str, str]:
    """The provenance tags of a log line's comment (as `log_tag_comment` wrote them), decoded;
    empty when the line has none."""
    m = TAG_COMMENT_RE.search(text)
    pairs = (part.split("=", 1) for part in m.group(1).split()) if m else ()
    return {k: one_line(unquote(v)) for k, v in pairs}


def shown_log(text: str) -> str:
    """A daily log as the session-start bundle shows it: each provenance comment as inline code
    (decoded, on one line), other HTML comments removed, and no line of it a heading (its title `# date`
    becomes the date)."""
    from memtool.chunking import COMMENT_RE

    def tags(m: re.Match) -> str:
        found = comment_tags(m.group(0))
        return inline_code(" ".join(f"{k}={v}" for k, v in found.items())) if found else ""

    first, _, rest = text.partition("\n")
    body = COMMENT_RE.sub(tags, rest)
    title = first.strip()[2:] if LOG_TITLE_RE.fullmatch(first.strip()) else no_headings(first)  # the date, under the section's heading
    return title + ("\n" + no_headings(body) if rest else "")


__all__ = ["comment_tags", "inline_code", "log_tag_comment", "no_headings", "one_line", "shown_log", "terminal_safe"]
