"""Every core command through typer's CliRunner, on a real root with the default providers (the tests' fake
embedder standing for `auto`, tests/conftest.py)."""

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from memtool.cli.main import app
from tests.conftest import transcript_path

runner = CliRunner()


def run(*args, input=None):
    return runner.invoke(app, list(args), input=input)


@pytest.fixture
def ready(root):
    assert run("init").exit_code == 0
    (root / "s1.md").write_text("Alice: We decided to move billing to Postgres. Bob will write the migration before the March 15 audit.\n")
    (root / "s2.md").write_text("Carol: The dark mode toggle shipped in the React dashboard; Maria reviewed the contrast.\n")
    return root


def test_init_is_idempotent_and_never_overwrites(root):
    first = run("init")
    assert first.exit_code == 0 and "created MEMORY.md" in first.output
    (root / "MEMORY.md").write_text("# mine\n")
    second = run("init")
    assert second.exit_code == 0 and "nothing to do" in second.output
    assert (root / "MEMORY.md").read_text() == "# mine\n"
    assert (root / "memory/.gitignore").read_text().startswith("# derived")


def test_log_from_argument_and_stdin(ready):
    assert run("log", "first note").exit_code == 0
    assert run("log", input="second note\nwith two lines\n").exit_code == 0
    [log] = list((ready / "memory").glob("20*.md"))
    text = log.read_text()
    assert text.startswith("# 20") and "first note" in text and "second note\n  with two lines" in text


def test_compress_search_show_context_stats(ready):
    out = run("compress", "s1.md", "--date", "2026-02-07T10:00", "--session", "billing", "--json")
    assert out.exit_code == 0, out.output
    [entry] = json.loads(out.stdout)
    assert entry["source_session"] == "billing" and entry["timestamp"].startswith("2026-02-07")
    assert run("compress", "s2.md", "--importance", "high").exit_code == 0

    res = run("search", "billing Postgres migration", "--json")
    hits = json.loads(res.stdout)
    assert hits[0]["id"] == entry["id"]
    assert set(hits[0]) >= {"id", "kind", "score", "source_session", "timestamp", "text"}
    assert json.loads(run("search", "dashboard", "--json", "--importance", "high", "--kind", "entry").stdout)[0]["source_session"] == "main"
    later = json.loads(run("search", "Postgres billing", "--json", "--since", "2026-03-01", "--kind", "entry").stdout)
    assert entry["id"] not in {h["id"] for h in later} and all(h["timestamp"] >= "2026-03" for h in later)
    earlier = json.loads(run("search", "Postgres billing", "--json", "--until", "2026-02-07", "--kind", "entry").stdout)
    assert [h["id"] for h in earlier] == [entry["id"]]
    assert "billing" in run("search", "billing").stdout  # the rich table renders

    shown = run("show", entry["id"], "--json")
    assert json.loads(shown.stdout)["id"] == entry["id"]
    ctx = run("context", "billing database", "--budget", "300", "--json")
    data = json.loads(ctx.stdout)
    assert data["tokens"] <= 300 and "Postgres" in data["text"] and data["template"] == "chat"
    for template in ("detailed", "summary"):
        assert run("context", "billing", "--template", template).exit_code == 0
    stats = json.loads(run("stats", "--json").stdout)
    assert stats["entries"] == 2 and stats["pending_embeddings"] == 0


def test_search_for_yesterday_finds_yesterdays_session_whatever_its_words(ready):
    assert run("compress", "s1.md", "--date", "yesterday", "--session", "yesterday").exit_code == 0
    assert run("compress", "s2.md", "--date", "5 days ago", "--session", "earlier").exit_code == 0
    hits = json.loads(run("search", "what did we do yesterday?", "--json").stdout)
    assert [h["source_session"] for h in hits] == ["yesterday", "earlier"]  # the closer to the day first
    assert hits[0]["score"] > hits[1]["score"]


def test_compress_json_lists_each_entry_once_with_what_happened_to_it(ready):
    first = run("compress", "s1.md", "--json")
    assert first.exit_code == 0, first.output
    [stored] = json.loads(first.stdout)
    assert (stored["status"], stored["inputs"]) == ("stored", ["s1.md"])
    (ready / "s1-copy.md").write_bytes((ready / "s1.md").read_bytes())
    # s2.md given twice: stored once, repeated in the same call; s1-copy.md repeats the entry stored above
    res = run("compress", "s2.md", "s1-copy.md", "s2.md", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert [e["id"] for e in out] == [out[0]["id"], stored["id"]], "each entry once, in input order"
    assert (out[0]["status"], out[0]["inputs"]) == ("stored", ["s2.md", "s2.md"])
    assert "dark mode toggle" in out[0]["summary"]
    assert (out[1]["status"], out[1]["inputs"]) == ("duplicate", ["s1-copy.md"])
    assert {k: v for k, v in out[1].items() if k not in ("status", "inputs")} == {k: v for k, v in stored.items() if k not in ("status", "inputs")}
    assert res.stderr.count("already stored as") == 2
    assert json.loads(run("stats", "--json").stdout)["entries"] == 2


def test_compress_folder_with_progress_and_bad_file(ready):
    folder = ready / "backlog"
    folder.mkdir()
    for i in range(5):
        (folder / f"day{i}.md").write_text(f"Dana: session {i} about the search index rebuild and caching.\n")
    (folder / "empty.md").write_text("   \n")
    res = run("compress", str(folder))
    assert res.exit_code == 2
    assert "skipped" in res.stderr and "empty.md" in res.stderr
    stats = json.loads(run("stats", "--json").stdout)
    assert stats["entries"] == 5
    sessions = {h["source_session"] for h in json.loads(run("search", "search index rebuild", "--json", "-n", "10").stdout)}
    assert {"day0", "day4"} <= sessions


@pytest.mark.parametrize(
    "args,code,message",
    [
        (["show", "ctx-20990101-deadbeef"], 9, "no entry"),
        (["search", "x", "--importance", "urgent"], 2, "--importance"),
        (["search", "x", "--since", "next blursday"], 2, "cannot read the date"),
        (["context", "x", "--template", "fancy"], 2, "unknown template"),
        (["context", "x", "--budget", "10"], 2, "too small"),
        (["compress", "missing.md"], 2, "no such file"),
    ],
)
def test_errors_are_clear_with_exit_codes(ready, args, code, message):
    res = run(*args)
    assert res.exit_code == code, res.output
    assert message in res.stderr


def test_not_a_root_and_unknown_option(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMTOOL_ROOT", str(tmp_path / "empty"))
    res = run("search", "x")
    assert res.exit_code == 3 and "memory init" in res.stderr
    assert run("search", "x", "--frobnicate").exit_code == 2


def test_binary_and_invalid_utf8(ready):
    (ready / "bin.md").write_bytes(b"\x00\x01\x02binary")
    res = run("compress", "bin.md")
    assert res.exit_code == 2 and "binary" in res.stderr
    (ready / "latin1.md").write_bytes("Café meeting with Zoë about the rollout plan.".encode("latin-1"))
    res = run("compress", "latin1.md", "--json")
    assert res.exit_code == 0 and "invalid UTF-8" in res.stderr
    assert "\ufffd" in json.loads(res.stdout)[0]["summary"]


@pytest.mark.real_embedder  # `init` in process writes the embedder the real processes then use
def test_real_subprocess(ready, env):
    cmd = [sys.executable, "-m", "memtool"]
    done = subprocess.run([*cmd, "compress", "s1.md"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = subprocess.run([*cmd, "search", "Postgres billing", "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert found.returncode == 0 and json.loads(found.stdout)[0]["kind"] == "entry"
    bad = subprocess.run([*cmd, "--root", str(ready / "nope"), "stats"], env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 3 and "not a memory root" in bad.stderr


def test_search_table_shows_brackets_as_typed(ready):
    assert run("log", "Fixed [bold]render[/bold] bug in the [red] banner").exit_code == 0
    out = run("search", "render banner").stdout
    assert "[bold]render[/bold]" in out and "[red]" in out


@pytest.mark.real_embedder  # the cold search loads the default embedder (e5 where it runs) as a user's would
def test_a_cold_search_stays_light(ready):
    """A cold `memory search` keeps OpenBLAS to one thread (unless the user chose) and never loads
    numpy.ma (np.unique pulls it in: +25 ms per cold search)."""
    assert run("compress", "s1.md").exit_code == 0
    code = (
        "import atexit, os, sys\n"
        "atexit.register(lambda: print('numpy.ma' in sys.modules, os.environ.get('OPENBLAS_NUM_THREADS')))\n"
        "from memtool.cli.main import run\n"
        "sys.argv = ['memory', 'search', 'Postgres billing']\n"
        "run()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"} | {"MEMTOOL_ROOT": str(ready)}
    for preset, expected in ((None, "False 1"), ("2", "False 2")):
        done = subprocess.run(
            [sys.executable, "-c", code], env=env | ({"OPENBLAS_NUM_THREADS": preset} if preset else {}), capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert "billing" in done.stdout.lower()
        assert done.stdout.splitlines()[-1] == expected


CLAUDE_JSONL = os.path.join(os.path.dirname(__file__), "..", "fixtures", "hooks", "claude_transcript.jsonl")


def _kept(root, entry_id):
    return transcript_path(root, entry_id).read_text()


def test_claude_jsonl_on_stdin_is_converted(ready):
    from memtool.transcripts import read_transcript

    with open(CLAUDE_JSONL, "rb") as fh:
        raw = fh.read()
    res = run("compress", "-", "--json", input=raw)
    assert res.exit_code == 0, res.output
    [entry] = json.loads(res.stdout)
    assert not entry["summary"].startswith("{") and "Login form crash fixed" in entry["summary"]
    assert _kept(ready, entry["id"]) == read_transcript(CLAUDE_JSONL)  # the conversation, not the raw JSON


@pytest.mark.parametrize("text", ["Dana: plain notes about the Redis cache.\n", '["a", "b"]\n', '{"a": 1}\n'])
def test_stdin_that_is_not_a_known_transcript_format_is_kept_as_text(ready, text):
    res = run("compress", "-", "--json", input=text)
    assert res.exit_code == 0, res.output
    assert _kept(ready, json.loads(res.stdout)[0]["id"]) == text


def test_upper_case_suffixes_are_converted_and_found_in_folders(ready):
    from memtool.transcripts import read_transcript

    with open(CLAUDE_JSONL, "rb") as fh:
        raw = fh.read()
    (ready / "session.JSONL").write_bytes(raw)
    res = run("compress", "session.JSONL", "--json")
    assert res.exit_code == 0, res.output
    assert _kept(ready, json.loads(res.stdout)[0]["id"]) == read_transcript(CLAUDE_JSONL)
    folder = ready / "backlog"
    folder.mkdir()
    (folder / "NOTES.MD").write_text("Erin: the nightly export moved to 2 am.\n")
    res = run("compress", str(folder), "--json")
    assert res.exit_code == 0, res.output  # a folder of upper-case names is not "no transcript files"
    assert _kept(ready, json.loads(res.stdout)[0]["id"]) == "Erin: the nightly export moved to 2 am.\n"


def test_log_from_stdin_keeps_json_as_written(ready):
    note = '{"role": "user", "content": "not a transcript, a note"}'
    assert run("log", "-", input=note + "\n").exit_code == 0
    [log] = list((ready / "memory").glob("20*.md"))
    assert note in log.read_text()


def _lines(res):
    return [line for line in res.stdout.splitlines() if line.startswith("ctx-")]


def test_a_file_given_twice_in_one_call_is_labelled_duplicate_once(ready):
    res = run("compress", "s1.md", "s1.md")
    assert res.exit_code == 0, res.output
    first, second = _lines(res)
    assert first.split()[0] == second.split()[0]
    assert "[duplicate" not in first and "[duplicate: this transcript was already stored; nothing added]" in second
    assert "1 entry stored (1 duplicate added nothing), overall compression" in res.stdout
    assert json.loads(run("stats", "--json").stdout)["entries"] == 1

    again = run("compress", "s1.md", "s1.md")  # a later call: both repeat the stored entry
    assert all("[duplicate" in line for line in _lines(again)) and len(_lines(again)) == 2
    assert "0 entries stored (2 duplicates added nothing)" in again.stdout


def test_a_file_in_a_folder_and_given_again_is_labelled_duplicate_once(ready):
    folder = ready / "dir"
    folder.mkdir()
    (folder / "s1.md").write_bytes((ready / "s1.md").read_bytes())
    (folder / "s2.md").write_bytes((ready / "s2.md").read_bytes())
    res = run("compress", str(folder), "s1.md", "s1.md")
    assert res.exit_code == 0, res.output
    labels = ["[duplicate" in line for line in _lines(res)]
    assert labels == [False, False, True, True]
    assert "2 entries stored (2 duplicates added nothing)" in res.stdout


def test_search_says_what_it_worked_around(ready):
    (ready / "memory/2026-02-03.md").write_bytes(b"# 2026-02-03\n- 09:00 caf\xe9 quetzal sighting\n")
    res = run("search", "quetzal sighting")
    assert res.exit_code == 0 and "quetzal" in res.stdout
    assert "2026-02-03.md: not valid UTF-8" in res.stderr


def test_a_long_query_is_cut_with_a_warning(ready):
    (ready / "memory/2026-02-03.md").write_text("# 2026-02-03\n- 09:00 quetzal sighting by the river\n")
    query = "quetzal sighting " + "x" * 5000 + " more words after the cut"
    res = run("search", query, "--json")
    assert res.exit_code == 0 and "quetzal" in res.stdout
    assert f"query: searched its first 1,000 characters of {len(query):,}" in res.stderr
