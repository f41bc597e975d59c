"""Decay with age, boost with use: use counts live in the cache (reads never dirty git),
survive concurrent writers and rebuilds; pinned, high and critical entries do not decay."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memtool import constants as C
from memtool.app import open_memory
from memtool.cache import access_counts, count_access
from memtool.config import Settings
from memtool.dayfile import day_document, read_day
from memtool.fsutil import atomic_write_text
from memtool.scaffold import init
from memtool.search.engine import boost
from memtool.store import Layout
from memtool.sync import sync

NOW = datetime.now(timezone.utc)


@pytest.fixture
def mem(root, fake_embedder, fake_compressor):
    init(root)
    return open_memory(root, embedder=fake_embedder, compressor=fake_compressor)


def versioned(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".cache" not in p.parts and p.name != ".lock" and ".git" not in p.parts
    }


def set_fields(mem, entry_id: str, **fields) -> None:
    entry = mem.get(entry_id)
    path = mem.layout.day_file(entry.day)
    atomic_write_text(path, day_document(entry.day, [replace(e, **fields) if e.id == entry_id else e for e in read_day(path)]))
    mem.invalidate()


def test_queries_count_uses_in_the_cache_and_leave_the_files_alone(root, fake_embedder, fake_compressor):
    init(root)
    off = open_memory(root, embedder=fake_embedder, compressor=fake_compressor)
    a = off.compress("Gizmo cache tuning: warm the gizmo cache at boot.", when=NOW - timedelta(days=3))
    b = off.compress("Widget rollout plan for the mobile app.", when=NOW - timedelta(days=2))
    off.search("gizmo cache")
    assert access_counts(off.layout) == {}  # the boost is off by default: nothing counted
    mem = open_memory(root, embedder=fake_embedder, compressor=fake_compressor, access_boost=0.05)
    before = versioned(root)
    mem.search("gizmo cache", kinds=("entry",), limit=1)
    mem.search("gizmo", kinds=("entry",), limit=1)
    mem.context("widget rollout", limit=1)
    counts = access_counts(mem.layout)
    assert counts[a.id] == 2 and counts[b.id] == 1
    assert versioned(root) == before
    sync(mem, full=True)  # a rebuild of the search tables keeps them: they are the one thing the files cannot give back
    assert access_counts(mem.layout) == counts


def test_a_cli_search_does_not_dirty_git(root, tmp_path, fake_compressor, model_cache, monkeypatch):
    git = shutil.which("git")
    if git is None:
        pytest.skip("git not installed")
    monkeypatch.setenv("MEMTOOL_EMBEDDER", "wordllama")
    init(root)  # a WordLlama store, from the model cache the CLI shares (`auto` keeps the store's model)
    open_memory(root, compressor=fake_compressor, embedder="wordllama").compress("Gizmo cache tuning notes.", when=NOW)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t", MEMTOOL_ACCESS_BOOST="0.05")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "memory"]):
        subprocess.run([git, *args], cwd=root, env=env, check=True)
    res = subprocess.run(
        [sys.executable, "-m", "memtool", "search", "gizmo", "--kind", "entry"], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    assert access_counts(Layout(root))
    assert subprocess.run([git, "status", "--porcelain"], cwd=root, env=env, capture_output=True, text=True).stdout == ""


def test_a_damaged_store_reads_as_no_counts_and_is_rebuilt(root, fake_embedder, fake_compressor):
    init(root)
    mem = open_memory(root, embedder=fake_embedder, compressor=fake_compressor, access_boost=0.05)
    entry = mem.compress("Gizmo cache tuning: warm the gizmo cache at boot.", when=NOW - timedelta(days=3))
    count_access(mem.layout, [entry.id, entry.id])  # repeated in one answer: one use
    assert access_counts(mem.layout) == {entry.id: 1}
    path = mem.layout.cache_dir / C.CACHE_FILE
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.write_bytes(b"\xff\xfe not a database" * 200)
    assert access_counts(mem.layout) == {}
    count_access(mem.layout, [entry.id])  # skipped quietly: a search must not fail for a count
    assert [h.id for h in mem.search("gizmo cache", kinds=("entry",))] == [entry.id]  # the search rebuilt the store
    assert access_counts(mem.layout) == {entry.id: 1}


def _hammer(root: str, worker: int, rounds: int, out) -> None:
    lay = Layout(Path(root))
    for i in range(rounds):
        count_access(lay, ["shared", f"w{worker}"])
    out.put(0)


def test_concurrent_writers_may_lose_increments_never_the_store(root):
    workers, rounds = 4, 150
    ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_hammer, args=(str(root), w, rounds, out)) for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * workers
    assert [out.get(timeout=5) for _ in procs] == [0] * workers
    counts = access_counts(Layout(root))
    assert 0 < counts["shared"] <= workers * rounds
    assert all(0 < counts[f"w{w}"] <= rounds for w in range(workers))


def test_use_boost_lifts_an_entry_used_before(root, fake_embedder, fake_compressor):
    """Off by default: on LoCoMo any boost lowered MRR (questions rarely repeat what was asked before)."""
    init(root)
    plain = open_memory(root, embedder=fake_embedder, compressor=fake_compressor)
    first = plain.compress("Gizmo cache notes, part alpha.", when=NOW - timedelta(days=5))
    second = plain.compress("Gizmo cache notes, part bravo.", when=NOW - timedelta(days=5, hours=1))
    order = [h.id for h in plain.search("gizmo cache notes", kinds=("entry",))]
    assert order[:2] == [second.id, first.id] or order[:2] == [first.id, second.id]
    behind = order[1]
    for _ in range(5):
        count_access(plain.layout, [behind])
    assert [h.id for h in plain.search("gizmo cache notes", kinds=("entry",))][:2] == order[:2]  # boost off by default
    boosted = open_memory(root, embedder=fake_embedder, compressor=fake_compressor, access_boost=0.1)
    assert [h.id for h in boosted.search("gizmo cache notes", kinds=("entry",))][0] == behind
    assert boost([0, 5], 0.1).tolist() == pytest.approx([1.0, 1.0 + 0.1 * 1.791759])


def test_decay_favours_recent_but_not_pinned_or_important(root, fake_embedder, fake_compressor):
    init(root)
    mem = open_memory(root, embedder=fake_embedder, compressor=fake_compressor)
    old = mem.compress("Kafka Retention: retention of Kafka events, Kafka retention per topic.", when=NOW - timedelta(days=400))
    new = mem.compress("Kafka retention is now longer for the billing events we keep.", when=NOW - timedelta(days=1))
    query = dict(query="kafka retention", kinds=("entry",))
    assert [h.id for h in mem.search(**query)][:2] == [old.id, new.id]  # no decay by default: the better match first
    decaying = open_memory(root, embedder=fake_embedder, compressor=fake_compressor, recency_half_life_days=30)
    assert [h.id for h in decaying.search(**query)][:2] == [new.id, old.id]
    for fields in ({"pinned": True}, {"importance": "high"}, {"importance": "critical"}):
        set_fields(mem, old.id, **{"pinned": False, "importance": "medium", **fields})
        decaying.invalidate()
        assert [h.id for h in decaying.search(**query)][:2] == [old.id, new.id], fields
    set_fields(mem, old.id, pinned=False, importance="low")
    decaying.invalidate()
    assert [h.id for h in decaying.search(**query)][:2] == [new.id, old.id]


def test_the_setting_and_its_default():
    assert Settings().access_boost == C.DEFAULT_ACCESS_BOOST
    assert {name for name, _, _ in Settings.describe()} >= {"access_boost", "recency_half_life_days"}
