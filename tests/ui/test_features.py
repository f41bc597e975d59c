"""The viewer's features over HTTP against a real server: the timeline and its filters, search with
the CLI's hits, the context bundle, one entry with its transcript and supersedes links, edits that
leave the bytes the CLI's command (and a hand edit) leaves, forget, archive, promote, the pictures,
and the live event stream."""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
import threading
import time
from datetime import datetime, timezone

import pytest
from typer.testing import CliRunner

from memtool.cli.main import app
from memtool.store import Layout
from memtool.ui.server import Hub
from tests.ui.conftest import serving


def cli(*args: str) -> str:
    done = CliRunner().invoke(app, list(args))
    assert done.exit_code == 0, done.output
    return done.stdout


def ids_by_session(c) -> dict[str, str]:
    return {i["source_session"]: i["id"] for i in c.json("/api/timeline")["items"] if i["kind"] == "entry"}


def test_the_timeline_lists_entries_and_logs_newest_first_and_filters(ui):
    c = ui.signed_in()
    data = c.json("/api/timeline")
    assert [(i["kind"], i.get("source_session", i["day"])) for i in data["items"]] == [
        ("log", "2026-03-09"),
        ("entry", "billing"),
        ("entry", "web"),
        ("entry", "export"),
    ]
    assert data["agents"] == ["claude", "codex"]
    session = lambda q: [i.get("source_session") for i in c.json("/api/timeline?" + q)["items"]]  # noqa: E731
    assert session("trust=untrusted") == ["web"]
    assert session("trust=trusted") == ["billing", "export"]
    assert session("importance=high") == ["billing"]
    assert session("agent=codex") == ["web"]
    assert session("since=2026-03-03&until=2026-03-08") == ["web"]
    assert session("topic=general&agent=claude") == ["billing", "export"]
    status, _, body = c.get("/api/timeline?importance=urgent")
    assert status == 400 and b"importance must be one of" in body


def test_a_daily_log_is_shown_as_text(ui):
    log = ui.signed_in().json("/api/log/2026-03-09")
    assert "remember to rotate the staging keys" in log["text"] and log["path"] == "memory/2026-03-09.md"


@pytest.mark.parametrize("query", ["export database", "billing queue", "zeppelin", "pwned script"])
def test_search_gives_the_hits_of_memory_search_json(ui, query):
    got = ui.signed_in().json("/api/search?q=" + query.replace(" ", "+"))
    assert got["hits"] == json.loads(cli("search", query, "--json"))
    assert got["hits"], query


def test_search_with_options_gives_the_hits_of_the_cli_with_them(ui):
    got = ui.signed_in().json("/api/search?q=billing+export&kind=entry&trusted_only=1&limit=1&since=2026-03-05")
    assert got["hits"] == json.loads(cli("search", "billing export", "--kind", "entry", "--trusted-only", "--limit", "1", "--since", "2026-03-05", "--json"))


def test_search_marks_the_matched_words_as_runs_of_text(ui):
    got = ui.signed_in().json("/api/search?q=stream+rows")
    runs = got["marks"][0]["text"] + got["marks"][0]["passage"]
    assert ["stream", True] in runs and ["rows", True] in runs
    assert "".join(piece for piece, _ in got["marks"][0]["text"]) == got["hits"][0]["text"]


def test_context_is_the_bundle_of_memory_context_with_its_tokens_against_the_budget(ui):
    got = ui.signed_in().json("/api/context?q=billing+queue&budget=300")
    want = json.loads(cli("context", "billing queue", "--budget", "300", "--json"))
    assert got == want
    assert got["budget"] == 300 and 0 < got["tokens"] <= 300


def test_an_entry_with_its_transcript_and_the_entries_around_it(ui, seeded):
    c = ui.signed_in()
    billing = ids_by_session(c)["billing"]
    newer = seeded.compress(
        "Billing queue moved to a Postgres outbox.\n", when=datetime(2026, 3, 10, tzinfo=timezone.utc), session="billing2", supersedes=[billing]
    )
    old = c.json(f"/api/entry/{billing}")
    assert old["entry"] == json.loads(cli("show", billing, "--json"))
    assert old["transcript"].startswith("Billing queue: Postgres with SKIP LOCKED")
    assert old["day_file"] == "memory/index/2026-03-09.json" and not old["archived"]
    assert [link["id"] for link in old["superseded_by"]] == [newer.id]
    assert c.json(f"/api/entry/{newer.id}")["supersedes"] == [{"id": billing, "summary": old["entry"]["summary"], "day": "2026-03-09", "live": True}]
    status, _, body = c.get("/api/entry/ctx-20260302-deadbeef")
    assert status == 404 and b"no entry with id" in body


def _git(root, *args):
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def test_an_edit_leaves_the_bytes_of_memory_edit_and_the_diff_of_a_hand_edit(ui, seeded, tmp_path):
    root = seeded.layout.root
    c = ui.signed_in()
    eid = ids_by_session(c)["export"]
    day = Layout(root).day_file("2026-03-02")
    before = day.read_bytes()
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".cache", ".lock"))
    changes = {"summary": "Nightly export streams rows with COPY.", "importance": "critical", "pinned": True, "action_items": ["watch the next run"]}
    status, _, body = c.post(f"/api/entry/{eid}/edit", changes, csrf=ui.csrf)
    assert status == 200, body
    assert sorted(json.loads(body)["changed"]) == ["action_items", "importance", "pinned", "summary"]
    # the CLI's command for it, on a copy of the store, writes the same bytes
    done = CliRunner().invoke(
        app,
        ["--root", str(copy), "edit", eid, "--summary", changes["summary"], "--importance", "critical", "--pin", "--action-item", "watch the next run"],
    )
    assert done.exit_code == 0, done.output
    assert day.read_bytes() == (copy / "memory/index/2026-03-02.json").read_bytes()
    # and a hand edit: the same JSON with those values, in the file's own format
    hand = json.loads(before)
    hand["entries"][0].update(changes)
    assert day.read_text() == json.dumps(hand, indent=2, ensure_ascii=False) + "\n"
    # git diff shows the changed lines alone
    _git(copy, "init", "-q")
    (copy / "memory/index/2026-03-02.json").write_bytes(before)
    _git(copy, "add", "memory/index/2026-03-02.json")
    (copy / "memory/index/2026-03-02.json").write_bytes(day.read_bytes())
    changed = [line for line in _git(copy, "diff", "-U0").splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert len(changed) == 10, changed  # summary, importance, pinned: a line out and one in each; action_items: "[]" out, three lines in
    assert seeded.get(eid).summary == changes["summary"]


def test_bad_edits_are_refused_and_change_nothing(ui, seeded):
    c = ui.signed_in()
    eid = ids_by_session(c)["export"]
    day = Layout(seeded.layout.root).day_file("2026-03-02")
    before = day.read_bytes()
    for bad in ({"summary": ""}, {"importance": "urgent"}, {"pinned": "yes"}, {"id": "ctx-x"}, {"decisions": "one"}, {}, []):
        status, _, body = c.post(f"/api/entry/{eid}/edit", bad, csrf=ui.csrf)
        assert status == 400, (bad, body)
    assert day.read_bytes() == before


def test_forget_removes_the_entry_from_search_and_its_files(ui, seeded):
    c = ui.signed_in()
    eid = ids_by_session(c)["export"]
    assert eid in [h["id"] for h in c.json("/api/search?q=zeppelin")["hits"]]
    status, _, body = c.post(f"/api/entry/{eid}/forget", csrf=ui.csrf)
    assert status == 200, body
    assert eid not in [h["id"] for h in c.json("/api/search?q=zeppelin")["hits"]]
    assert eid not in json.dumps(json.loads(cli("search", "zeppelin", "--json")))
    assert not Layout(seeded.layout.root).transcript_file(eid).exists()
    assert c.get(f"/api/entry/{eid}")[0] == 404


def test_archive_moves_the_entry_and_it_is_shown_read_only(ui, seeded):
    c = ui.signed_in()
    eid = ids_by_session(c)["billing"]
    status, _, body = c.post(f"/api/entry/{eid}/archive", csrf=ui.csrf)
    assert status == 200 and json.loads(body)["entries"] == [eid], body
    shown = c.json(f"/api/entry/{eid}")
    assert shown["archived"] and shown["day_file"] == "memory/archive/2026/index/2026-03-09.json"
    assert eid not in ids_by_session(c).values()
    status, _, body = c.post(f"/api/entry/{eid}/edit", {"summary": "changed"}, csrf=ui.csrf)
    assert status == 400 and b"archived" in body


def test_promote_writes_the_bullet_memory_promote_writes(ui, seeded):
    c = ui.signed_in()
    ids = ids_by_session(c)
    status, _, body = c.post(f"/api/entry/{ids['export']}/promote", {"section": "Key decisions"}, csrf=ui.csrf)
    assert status == 200, body
    done = json.loads(body)
    assert done["added"] and done["path"] == "MEMORY.md"
    assert done["bullet"] in (seeded.layout.root / "MEMORY.md").read_text()
    assert c.post(f"/api/entry/{ids['web']}/promote", csrf=ui.csrf)[0] == 400  # untrusted: refused as by the CLI


def test_the_pictures_hold_the_numbers_of_memory_stats(ui):
    p = ui.signed_in().json("/api/pictures")
    stats = json.loads(cli("stats", "--json"))
    assert p["stats"]["entries"] == stats["entries"] == 3
    assert p["weeks"] == [["2026-W10", 2], ["2026-W11", 1]]
    assert p["topics"]["series"] == {"general": [2, 1]}
    assert sum(n for _, n in p["ratios"]) == 3
    names = {n["name"] for n in p["graph"]["nodes"]}
    assert names <= {e["name"] for kind in ("people", "systems") for e in json.loads(cli("entities", "--json"))[kind]}


def _events(port: int, cookie: str, out: list, ready: threading.Event) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/api/events", headers={"Host": f"127.0.0.1:{port}", "Cookie": cookie})
    r = conn.getresponse()
    ready.set()
    while len(out) < 2:
        line = r.fp.readline().decode()
        if line.startswith("data: "):
            out.append(json.loads(line[6:]))


def test_a_file_changed_on_disk_is_announced_on_the_event_stream(seeded):
    from memtool.app import open_memory
    from memtool.ui.server import watch

    hub, stop = Hub(), threading.Event()
    with serving(seeded, hub) as run:
        c = run.signed_in()
        got: list = []
        ready = threading.Event()
        threading.Thread(target=_events, args=(run.port, c.cookie, got, ready), daemon=True).start()
        assert ready.wait(10)
        watch(seeded, hub, stop, lambda: open_memory(seeded.layout.root, embedder=seeded.embedder), lambda message: None)
        deadline = time.monotonic() + 30
        while len(got) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        assert got[:2] == [{"type": "rebuilding"}, {"type": "synced"}]  # the watcher's first sync


def test_a_day_file_edited_by_hand_shows_at_the_next_load(ui, seeded):
    c = ui.signed_in()
    assert "user: The nightly export job" in [i.get("summary") for i in c.json("/api/timeline")["items"]][-1]
    day = Layout(seeded.layout.root).day_file("2026-03-02")
    doc = json.loads(day.read_text())
    doc["entries"][0]["summary"] = "Edited in an editor."
    day.write_text(json.dumps(doc, indent=2) + "\n")
    assert [i.get("summary") for i in c.json("/api/timeline")["items"]][-1] == "Edited in an editor."


def test_the_timeline_pages_and_refuses_a_bad_offset(ui):
    c = ui.signed_in()
    assert [i["kind"] for i in c.json("/api/timeline?offset=3")["items"]] == ["entry"]
    for bad in ("-1", "x", "%C2%B2", "1e3"):
        status, _, body = c.get("/api/timeline?offset=" + bad)
        assert status == 400 and b"offset must be a whole number" in body, bad


def test_a_personal_entry_opens_edits_and_forgets_in_the_personal_roots_files(with_personal):
    mine, home = with_personal.entry, with_personal.personal
    project_files = {p: p.read_bytes() for p in (with_personal.mem.layout.index_dir).rglob("*") if p.is_file()}
    with serving(with_personal.mem) as ui:
        c = ui.signed_in()
        hit = next(h for h in c.json("/api/search?q=capybaraflint+dotfiles")["hits"] if h["id"] == mine)
        assert (hit["origin"], hit["private"]) == ("personal", False)
        shown = c.json(f"/api/entry/{mine}")
        assert (shown["origin"], shown["private"], shown["day_file"]) == ("personal", False, "memory/index/2026-03-05.json")
        listed = {i["id"]: (i["origin"], i["private"]) for i in c.json("/api/timeline")["items"] if i["kind"] == "entry"}
        assert listed.pop(mine) == ("personal", False) and set(listed.values()) == {("project", False)}, listed
        status, _, body = c.post(f"/api/entry/{mine}/edit", {"summary": "Dotfiles: the capybaraflint repo."}, csrf=ui.csrf)
        assert status == 200 and json.loads(body)["day_file"] == "memory/index/2026-03-05.json", body
        day = json.loads(Layout(home).day_file("2026-03-05").read_text())
        assert [e["summary"] for e in day["entries"]] == ["Dotfiles: the capybaraflint repo."]
        status, _, body = c.post(f"/api/entry/{mine}/forget", csrf=ui.csrf)
        assert status == 200 and json.loads(body)["entries"][0]["id"] == mine, body
        assert json.loads(Layout(home).day_file("2026-03-05").read_text())["entries"] == []
        assert mine in (Layout(home).index_dir / "tombstones.jsonl").read_text()
        assert mine not in [h["id"] for h in c.json("/api/search?q=capybaraflint+dotfiles")["hits"]]
        assert c.get(f"/api/entry/{mine}")[0] == 404
    assert {p: p.read_bytes() for p in (with_personal.mem.layout.index_dir).rglob("*") if p.is_file()} == project_files


def test_the_personal_memorys_daily_logs_and_entries_are_in_the_timeline_and_the_pictures(with_personal):
    home = with_personal.personal
    (home / "memory").mkdir(parents=True, exist_ok=True)
    (home / "memory" / "2026-03-05.md").write_text("# 2026-03-05\n- 09:30 tried the otterglen alias on the laptop\n")
    with serving(with_personal.mem) as ui:
        c = ui.signed_in()
        logs = {i["id"]: (i["day"], i["origin"]) for i in c.json("/api/timeline")["items"] if i["kind"] == "log"}
        assert logs.pop("2026-03-05.personal") == ("2026-03-05", "personal")
        assert logs and {origin for _, origin in logs.values()} == {"project"} and all("." not in ref for ref in logs), logs
        shown = c.json("/api/log/2026-03-05.personal")
        assert "otterglen alias on the laptop" in shown["text"]
        assert (shown["path"], shown["origin"], shown["private"]) == ("memory/2026-03-05.md", "personal", False)
        assert c.get("/api/log/2026-03-05")[0] == 404  # the project has no log that day: the personal one is not it
        status, _, body = c.get("/api/log/2026-03-05.elsewhere")
        assert status == 404 and b"no memory 'elsewhere'" in body, body
        assert c.get("/api/log/..personal")[0] == c.get("/api/log/2026-3-5.personal")[0] == 400
        p = c.json("/api/pictures")
        assert p["stats"]["entries"] == json.loads(cli("stats", "--json"))["entries"] == 3  # the project's numbers
        assert p["weeks"] == [["2026-W10", 3], ["2026-W11", 1]]  # the personal entry of 2026-03-05 counted
        assert sum(n for _, n in p["ratios"]) == 4
