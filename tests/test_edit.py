"""`memory edit ID` (memtool/edit.py): a field corrected in the day file as a hand edit would, and
`memory archive ID` (archive_ids): one entry moved now, whatever its age."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from typer.testing import CliRunner

from memtool.app import open_memory
from memtool.cli.main import app
from memtool.edit import edit_entry
from memtool.errors import BadInput, NotFound
from memtool.scaffold import init
from memtool.store import Layout, get_archived

WHEN = datetime(2026, 3, 2, 10, 0, tzinfo=timezone.utc)


@pytest.fixture
def mem(root, fake_embedder, fake_compressor):
    init(root)
    return open_memory(root, embedder=fake_embedder, compressor=fake_compressor)


@pytest.fixture
def two(mem):
    a = mem.compress("The nightly export times out. We stream rows with COPY now.\n", when=WHEN, session="export")
    b = mem.compress("Billing uses Postgres for its job queue.\n", when=WHEN.replace(hour=11), session="billing")
    return a, b


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_an_edit_changes_that_field_alone_as_a_hand_edit_would(mem, two):
    a, _ = two
    day = Layout(mem.layout.root).day_file("2026-03-02")
    before = json.loads(day.read_text())
    done = edit_entry(mem, a.id, {"summary": "  Export streams rows with COPY.  ", "decisions": ["use COPY", " ", "stream rows"], "pinned": True})
    assert sorted(done.changed) == ["decisions", "pinned", "summary"] and done.day_file == "memory/index/2026-03-02.json"
    before["entries"][0].update(summary="Export streams rows with COPY.", decisions=["use COPY", "stream rows"], pinned=True)
    assert day.read_text() == json.dumps(before, indent=2, ensure_ascii=False) + "\n"
    assert mem.get(a.id).summary == "Export streams rows with COPY."
    assert [h.id for h in mem.search("streams COPY", kinds=("entry",))][:1] == [a.id]  # the edited text is what search finds


def test_the_same_values_again_change_nothing(mem, two):
    a, _ = two
    day = Layout(mem.layout.root).day_file("2026-03-02")
    before = day.read_bytes()
    assert edit_entry(mem, a.id, {"summary": a.summary, "importance": a.importance}).changed == []
    assert day.read_bytes() == before


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"summary": ""},
        {"summary": 3},
        {"importance": "urgent"},
        {"pinned": "true"},
        {"decisions": "one"},
        {"decisions": [1]},
        {"id": "x"},
        {"summary": "a\x00b"},
    ],
)
def test_bad_changes_are_refused_and_nothing_is_written(mem, two, changes):
    day = Layout(mem.layout.root).day_file("2026-03-02")
    before = day.read_bytes()
    with pytest.raises(BadInput):
        edit_entry(mem, two[0].id, changes)
    assert day.read_bytes() == before


def test_unknown_bad_and_archived_ids(mem, two):
    with pytest.raises(NotFound):
        edit_entry(mem, "ctx-20260302-deadbeef", {"pinned": True})
    with pytest.raises(BadInput, match="not an entry id"):
        edit_entry(mem, "../../etc/passwd", {"pinned": True})
    done = run("archive", two[1].id)
    assert done.exit_code == 0, done.output
    with pytest.raises(BadInput, match="archived"):
        edit_entry(mem, two[1].id, {"pinned": True})


def test_secrets_in_an_edit_are_redacted_like_a_stored_session(mem, two):
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    edit_entry(mem, two[0].id, {"summary": f"the key {key} leaked"})
    assert key not in Layout(mem.layout.root).day_file("2026-03-02").read_text()


def test_the_cli_edits_and_says_what_changed(mem, two):
    a, _ = two
    done = run("edit", a.id, "--importance", "critical", "--action-item", "watch it", "--action-item", "tell Bob", "--pin")
    assert done.exit_code == 0, done.output
    assert done.stdout == f"edited {a.id}: importance, pinned, action_items in memory/index/2026-03-02.json\n"
    e = mem.get(a.id)
    assert (e.importance, e.action_items, e.pinned) == ("critical", ["watch it", "tell Bob"], True)
    assert run("edit", a.id, "--no-action-items", "--unpin").exit_code == 0
    assert (mem.get(a.id).action_items, mem.get(a.id).pinned) == ([], False)
    assert run("edit", a.id, "--importance", "urgent").exit_code == BadInput.exit_code
    assert run("edit", a.id).exit_code == BadInput.exit_code  # nothing to edit
    assert run("edit", "ctx-20260302-deadbeef", "--pin").exit_code == NotFound.exit_code


def test_archive_by_id_moves_that_entry_now_pinned_or_not(mem, two):
    a, b = two
    edit_entry(mem, a.id, {"pinned": True})
    done = run("archive", a.id, "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["entries"] == [a.id]
    assert mem.get(a.id) is None and get_archived(mem.layout, a.id).pinned
    assert mem.get(b.id) is not None  # the other entry of the day stays
    assert run("archive", a.id).exit_code == NotFound.exit_code  # already archived
    assert run("archive", "ctx-20260302-deadbeef").exit_code == NotFound.exit_code
