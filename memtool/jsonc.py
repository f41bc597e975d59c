"""Minimal-diff editing of JSON and JSONC (JSON with // and /* */ comments) config files.

The file is parsed into a tree of spans (where each value starts and ends in the text).
Edits splice text at those spans, so every byte outside the added or removed entries —
key order, indentation, blank lines, comments — stays as it was. After each edit the text
is parsed again and must hold the data the edit intended (else AssertionError: a bug here,
found before anything is written).
"""

from __future__ import annotations

import functools
import json
import operator
import re
from dataclasses import dataclass, field
from typing import Any, Literal

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_STRING = re.compile(r'"[^"\\\n]*(?:\\[\s\S][^"\\\n]*)*"')  # a backslash escapes any character, a line break ends it
_BLANK = re.compile(r"[ \t\r\n]*")
_BLANK_OR_COMMENTS = re.compile(r"(?:[ \t\r\n]+|//[^\n]*\n?|/\*[\s\S]*?\*/)*")
_INDENT = re.compile(r"[ \t]*")
_TRAILING_COMMENT = re.compile(r"[ \t]*(?://[^\n]*?(?=\r?\n|\r?\Z)|/\*[^\n]*?\*/)")
_LITERALS = {"true": True, "false": False, "null": None}
MAX_DEPTH = 200  # objects/arrays nested deeper are refused: no config looks like that, and walking
# them (here, in json, in copy.deepcopy) would end in a RecursionError


class JsoncError(ValueError):
    """The text is not valid JSON (or JSONC); carries the 1-based line and column."""

    def __init__(self, line: int, column: int, message: str) -> None:
        super().__init__(f"line {line}, column {column}: {message}")
        self.line = line
        self.column = column
        self.message = message


@dataclass
class Node:
    kind: Literal["object", "array", "scalar"]
    start: int
    end: int
    value: Any = None
    keys: list["Node"] = field(default_factory=list)  # an object's member names (string scalars)
    children: list["Node"] = field(default_factory=list)

    def member(self, key: str) -> tuple[int, "Node"] | None:
        """(index, value) of member `key`; the last one wins, as in json.loads."""
        i = max((i for i, name in enumerate(self.keys) if name.value == key), default=None)
        return None if i is None else (i, self.children[i])

    def item_start(self, i: int) -> int:
        return (self.keys or self.children)[i].start

    def plain(self) -> Any:
        if self.kind == "scalar":
            return self.value
        if self.kind == "array":
            return [c.plain() for c in self.children]
        return {k.value: c.plain() for k, c in zip(self.keys, self.children)}


def line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


class _Parser:
    def __init__(self, text: str, comments: bool) -> None:
        self.text = text
        self.comments = comments

    def fail(self, pos: int, message: str) -> JsoncError:
        return JsoncError(*line_col(self.text, pos), message)

    def skip(self, pos: int) -> int:
        pos = (_BLANK_OR_COMMENTS if self.comments else _BLANK).match(self.text, pos).end()  # type: ignore[union-attr]  # the pattern matches the empty string: never None
        if self.comments and self.text.startswith("/*", pos):
            raise self.fail(pos, "unterminated /* comment")
        return pos

    def document(self) -> Node:
        node = self.value(self.skip(0), 0)
        end = self.skip(node.end)
        if end != len(self.text):
            raise self.fail(end, "unexpected text after the JSON value")
        return node

    def string(self, pos: int) -> Node:
        match = _STRING.match(self.text, pos)
        if match is None:
            raise self.fail(pos, "unterminated string")
        try:
            return Node("scalar", pos, match.end(), value=json.loads(match.group()))
        except json.JSONDecodeError as err:
            raise self.fail(pos + err.pos, f"invalid string: {err.msg}") from None

    def value(self, pos: int, depth: int) -> Node:
        text = self.text
        if pos >= len(text):
            raise self.fail(pos, "expected a value, found the end of the file")
        if text[pos] == '"':
            return self.string(pos)
        if text[pos] not in "{[":
            match = _NUMBER.match(text, pos)
            if match:
                return Node("scalar", pos, match.end(), value=json.loads(match.group()))
            for word, literal in _LITERALS.items():
                if text.startswith(word, pos):
                    return Node("scalar", pos, pos + len(word), value=literal)
            raise self.fail(pos, f"unexpected character {text[pos]!r}")
        if depth >= MAX_DEPTH:
            raise self.fail(pos, f"objects and lists nested more than {MAX_DEPTH} levels deep")
        node = Node("object" if text[pos] == "{" else "array", pos, pos)
        close = "}" if node.kind == "object" else "]"
        pos = self.skip(pos + 1)
        while not text.startswith(close, pos):
            if node.children:
                if not text.startswith(",", pos):
                    raise self.fail(pos, f"expected ',' or '{close}'")
                pos = self.skip(pos + 1)
                if text.startswith(close, pos):
                    raise self.fail(pos, "trailing comma")
            if node.kind == "object":
                if not text.startswith('"', pos):
                    raise self.fail(pos, "expected a quoted key")
                node.keys.append(self.string(pos))
                pos = self.skip(node.keys[-1].end)
                if not text.startswith(":", pos):
                    raise self.fail(pos, "expected ':' after the key")
                pos = self.skip(pos + 1)
            node.children.append(self.value(pos, depth + 1))
            pos = self.skip(node.children[-1].end)
        node.end = pos + 1
        return node


def _at(data: Any, path: tuple[str | int, ...]) -> Any:
    return functools.reduce(operator.getitem, path, data)


def parse(text: str, comments: bool = False) -> Node:
    """Parse JSON (JSONC when `comments`) into a span tree; raises JsoncError."""
    if not comments:
        try:  # the standard library's messages for plain JSON
            json.loads(text)
        except json.JSONDecodeError as err:
            raise JsoncError(err.lineno, err.colno, err.msg) from None
        except RecursionError:
            pass  # nested thousands deep: the parser below stops at MAX_DEPTH with the position
    return _Parser(text, comments).document()


class Document:
    """A JSON/JSONC text (a leading BOM is kept aside) with its span tree."""

    def __init__(self, text: str, comments: bool = False) -> None:
        self.bom = "\ufeff" if text.startswith("\ufeff") else ""
        self.text = text[len(self.bom) :]
        self.comments = comments
        self.root = parse(self.text, comments)

    def data(self) -> Any:
        return self.root.plain()

    def full_text(self) -> str:
        return self.bom + self.text

    def inside(self, node: Node) -> str:
        return self.text[node.start + 1 : node.end - 1]

    def line_of(self, node: Node) -> int:
        return line_col(self.text, node.start)[0]

    def lookup(self, *path: str | int) -> tuple[int, Node] | None:
        """(index in its parent, node) at `path` from the root (member names and list indexes)."""
        node, found = self.root, (0, self.root)
        for key in path:
            if isinstance(key, str):
                found = node.member(key) if node.kind == "object" else None
            else:
                found = (key, node.children[key]) if node.kind == "array" and 0 <= key < len(node.children) else None
            if found is None:
                return None
            node = found[1]
        return found

    def entry(self, *path: str | int) -> tuple[int, Node]:
        found = self.lookup(*path)
        if found is None:
            raise KeyError("/".join(map(str, path)))
        return found

    def node(self, *path: str | int) -> Node:
        return self.entry(*path)[1]

    def replace(self, edits: list[tuple[int, int, str]], expected: Any = None) -> None:
        """Apply non-overlapping (start, end, replacement) edits, then parse again: the new text
        must hold `expected` (by default, the same data: a change of layout only)."""
        expected = self.data() if expected is None else expected
        text = self.text
        for start, end, new in sorted(edits, key=lambda e: e[0], reverse=True):
            text = text[:start] + new + text[end:]
        root = parse(text, self.comments)
        if root.plain() != expected:
            raise AssertionError("the text edit does not match the intended change (memtool bug)")
        self.root, self.text = root, text

    # --- edits ----------------------------------------------------------------------------

    def append(self, where: tuple[str | int, ...], value: Any, key: str | None = None) -> None:
        """Add `value` at the end of the container at `where` (as member `key` when it is an
        object), laid out like the container's existing entries."""
        text, newline, container = self.text, self._newline(), self.node(*where)
        expected = self.data()
        if key is None:
            _at(expected, where).append(value)
        else:
            _at(expected, where)[key] = value
        prefix = json.dumps(key, ensure_ascii=False) + ": " if key is not None else ""
        n = len(container.children)
        if n:
            last = container.children[-1]
            sep = self._separator_before(container.item_start(n - 1))
            after_comment = self._after_trailing_comment(last.end)
            if sep == " " and text[last.end : after_comment].lstrip(" \t").startswith("//"):
                # inline layout ending in a line comment: the entry must start on a new line
                sep = newline + self._line_indent(container.start) + self._indent_unit()
            entry = prefix + self._serialize(value, sep[len(newline) :] if sep != " " else None)
            if after_comment != last.end:  # `1 // note` -> `1, // note` + new line
                edits = [(last.end, last.end, ","), (after_comment, after_comment, sep + entry)]
            else:
                edits = [(last.end, last.end, "," + sep + entry)]
        else:
            own = self._line_indent(container.start)
            indent = own + self._indent_unit()
            entry = prefix + self._serialize(value, indent)
            if self.inside(container).strip(" \t\r\n"):  # only comments inside: keep them, after the entry
                edits = [(container.start + 1, container.start + 1, newline + indent + entry)]
            else:
                edits = [(container.start + 1, container.end - 1, newline + indent + entry + newline + own)]
        self.replace(edits, expected)

    def remove(self, *path: str | int) -> None:
        """Remove the entry at `path` with its comma. An entry as append() added it (the
        last one, or the only one, before any comments) goes with exactly the text append()
        inserted; otherwise entries on lines of their own take their lines with them."""
        expected = self.data()
        del _at(expected, path[:-1])[path[-1]]
        self.replace(self._removal(self.node(*path[:-1]), self.entry(*path)[0]), expected)

    def _removal(self, container: Node, i: int) -> list[tuple[int, int, str]]:
        text, n, blank = self.text, len(container.children), " \t\r\n"
        start, end = container.item_start(i), container.children[i].end
        if n == 1 and not (text[container.start + 1 : start] + text[end : container.end - 1]).strip(blank):
            return [(container.start + 1, container.end - 1, "")]  # nothing else inside: back to {} / []
        if n == 1 and not text[container.start + 1 : start].strip(blank):
            # first inside, comments after it: append() put it in front of them with a line break
            return [(container.start + 1, end, "")]
        comma = self._comma_after(container.children[i - 1].end) if i > 0 else -1  # the one before the entry
        last_of_several = i == n - 1 and n > 1
        resume = self._after_trailing_comment(comma + 1)
        rest_of_line = text[end:].split("\n", 1)[0]
        # joining that comment to the rest of the entry's line would comment out what follows
        joins = text[comma + 1 : resume].lstrip(" \t").startswith("//") and _BLANK_OR_COMMENTS.match(rest_of_line).end() < len(rest_of_line)  # type: ignore[union-attr]  # the pattern matches the empty string: never None
        if last_of_several and not text[resume:start].strip(blank) and not joins:
            # the comma append() put after the entry before, and the separator and entry it
            # put after that entry's same-line comment (if any)
            return [(comma, comma + 1, ""), (resume, end, "")]
        after = self._comma_after(end) + 1 if i < n - 1 else end
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", after)
        line_end = len(text) if line_end < 0 else line_end + 1
        if not text[line_start:start].strip(" \t") and not text[after:line_end].strip(blank):  # on lines of its own
            return ([(comma, comma + 1, "")] if last_of_several else []) + [(line_start, line_end, "")]
        if i > 0 and not text[comma + 1 : start].strip(blank):
            return [(comma, end, "")]
        if i > 0:  # a comment sits between: keep it
            return [(comma, comma + 1, ""), (start, end, "")]
        return [(start, _INDENT.match(text, after).end() if n > 1 else end, "")]  # type: ignore[union-attr]  # the pattern matches the empty string: never None

    # --- layout helpers -------------------------------------------------------------------

    def _newline(self) -> str:
        return "\r\n" if "\r\n" in self.text else "\n"

    def _line_indent(self, pos: int) -> str:
        return _INDENT.match(self.text, self.text.rfind("\n", 0, pos) + 1).group()  # type: ignore[union-attr]  # the pattern matches the empty string: never None

    def _indent_unit(self) -> str:
        """The indentation of the root object's first member on a line of its own."""
        for item in self.root.keys or self.root.children:
            indent = self._line_indent(item.start)
            if indent and self.text[: item.start].rstrip(" \t").endswith("\n"):
                return indent
        return "  "

    def _separator_before(self, pos: int) -> str:
        """Newline + indentation before an existing entry, or a single space if inline."""
        line_start = self.text.rfind("\n", 0, pos) + 1
        indent = self.text[line_start:pos]
        return self._newline() + indent if line_start and not indent.strip(" \t") else " "

    def _serialize(self, value: Any, indent: str | None) -> str:
        """`value` as JSON on one line (no `indent`), or laid out over lines indented by `indent`."""
        if indent is None:
            return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        dumped = json.dumps(value, ensure_ascii=False, indent=self._indent_unit())
        return dumped.replace("\n", self._newline() + indent)

    def _after_trailing_comment(self, pos: int) -> int:
        """End of a comment following `pos` on the same line (before its newline), else `pos`."""
        match = _TRAILING_COMMENT.match(self.text, pos) if self.comments else None
        return match.end() if match else pos

    def _comma_after(self, pos: int) -> int:
        """The comma after an entry that is not the last (the text parsed: nothing else can follow it)."""
        return _Parser(self.text, self.comments).skip(pos)
