"""Text from files and transcripts reaches the terminal shown, not acted on: an escape sequence in a
day file, a log or a transcript does not set the window title or clear the screen when `search`,
`compress`, `show`, `entities` or an error message prints it; `--json` keeps the bytes as stored."""

import json

import pytest
from typer.testing import CliRunner

from memtool.cli.main import app
from memtool.quoting import terminal_safe

runner = CliRunner()
TITLE = "\x1b]0;pwned\x07"  # OSC 0: set the window title
CLEAR = "\x1b[2J\x1b[H"  # erase the screen, cursor home
CSI8 = "\x9b31m"  # an 8-bit CSI
RLO = "\u202e"  # right-to-left override
HOSTILE = f"We moved billing to Postgres {TITLE}quietly{CLEAR} and Bob{CSI8} owns it{RLO}"


def run(*args):
    res = runner.invoke(app, list(args))
    return res, res.stdout + res.stderr


def raw_controls(out: str) -> list[str]:
    return [ch for ch in out if ch in "\x1b\x07\x9b\u202e"]


@pytest.fixture
def hostile(root):
    assert run("init")[0].exit_code == 0
    (root / "t.md").write_text(f"Alice: {HOSTILE}.\nBob: the migration lands before the March 15 audit.\n")
    return root


def test_search_compress_show_print_escapes_as_text_and_json_keeps_them(hostile):
    res, out = run("compress", "t.md", "--session", f"s{TITLE}")
    assert res.exit_code == 0 and not raw_controls(out)
    entry_id = out.split()[0]
    assert run("log", f"note {CLEAR} about Postgres")[0].exit_code == 0
    for args in (("search", "Postgres billing"), ("show", entry_id), ("entities",)):
        res, out = run(*args)
        assert res.exit_code == 0 and not raw_controls(out), (args, out)
    res, out = run("search", "Postgres billing")
    assert "\\x1b]0;pwned\\x07" in out  # shown, so the reader sees something was there
    shown = json.loads(run("show", entry_id, "--json")[0].stdout)
    assert TITLE in shown["source_session"] and CLEAR in shown["summary"]  # --json: intact (JSON escapes them itself)
    res, out = run("show", f"ctx-{CLEAR}")
    assert res.exit_code != 0 and not raw_controls(out)  # an error message naming what was typed


def test_terminal_safe_keeps_newlines_tabs_and_letters():
    assert terminal_safe("a\tb\nc\r\nd é ✓") == "a\tb\nc\r\nd é ✓"
    assert terminal_safe(f"x{TITLE}y\rz{CSI8}{RLO}") == "x\\x1b]0;pwned\\x07y\\x0dz\\x9b31m\\u202e"
