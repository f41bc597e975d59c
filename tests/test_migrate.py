"""`memory migrate`: a store in the layout before month folders (written by hand here, as an older
memtool wrote it) moves to the current one with every entry, vector and transcript intact."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
from typer.testing import CliRunner

from memtool.app import open_memory
from memtool.cli.main import app
from memtool.dayfile import day_document
from memtool.errors import OldLayout
from memtool.migrate import migrate
from memtool.models import Entry
from memtool.scaffold import init
from memtool.store import ArchiveLayout, Layout, Store
from tests.conftest import FakeCompressor, FakeEmbedder

TEXTS = {
    "ctx-20260131-0a0a0a0a": "Alice moved billing to Postgres in January.",
    "ctx-20260203-1b1b1b1b": "Bob chose Kafka for the event queue.",
    "ctx-20260203-2c2c2c2c": "Carol profiled the React bundle and dropped moment.js.",
    "ctx-20250110-3d3d3d3d": "Dan archived the old deploy scripts.",  # archived below
}


def entry(entry_id: str) -> Entry:
    day = f"{entry_id[4:8]}-{entry_id[8:10]}-{entry_id[10:12]}"
    return Entry.from_dict({"id": entry_id, "timestamp": f"{day}T10:00:00.000Z", "summary": TEXTS[entry_id], "keywords": TEXTS[entry_id].lower().split()[:3]})


def write_old_store(root, embedder) -> dict[str, np.ndarray]:
    """Day files, JSON vectors in one flat folder, flat transcripts: the layout before month folders."""
    init(root)
    vectors = {}
    for home, ids in ((root / "memory", list(TEXTS)[:3]), (root / "memory/archive/2025", list(TEXTS)[3:])):
        entries = [entry(i) for i in ids]
        for day in {e.day for e in entries}:
            (home / "index").mkdir(parents=True, exist_ok=True)
            (home / f"index/{day}.json").write_text(day_document(day, [e for e in entries if e.day == day]))
        for e, vec in zip(entries, embedder.embed_documents([e.embed_text() for e in entries])):
            (home / "index/embeddings").mkdir(parents=True, exist_ok=True)
            doc = {"id": e.id, "model": embedder.model, "dim": len(vec), "content_hash": e.content_hash(), "embedding": [round(float(x), 6) for x in vec]}
            (home / f"index/embeddings/{e.id}.json").write_text(json.dumps(doc, indent=2))
            (home / "transcripts").mkdir(exist_ok=True)
            (home / f"transcripts/{e.id}.md").write_text(f"user: {TEXTS[e.id]}\n")
            vectors[e.id] = np.array(doc["embedding"], dtype=np.float32)
    return vectors


def searches(root, embedder) -> list[list[str]]:
    mem = open_memory(root, embedder=embedder, compressor=FakeCompressor())
    return [[h.id for h in mem.search(q, limit=5, archive=True).hits] for q in ("billing postgres", "kafka queue", "react bundle", "deploy scripts")]


def test_an_old_store_migrates_with_everything_intact_and_searches_the_same(tmp_path):
    embedder = FakeEmbedder()
    old, fresh = tmp_path / "old", tmp_path / "fresh"
    vectors = write_old_store(old, embedder)
    with pytest.raises(OldLayout, match="memory migrate"):
        open_memory(old, embedder=embedder, compressor=FakeCompressor())
    plan = migrate(old, dry_run=True)
    assert (plan.transcripts, plan.vectors) == (4, 4) and Layout(old).legacy_files()  # a dry run moves nothing
    report = migrate(old)
    assert (report.transcripts, report.vectors, report.set_aside, report.left) == (4, 4, [], [])
    assert not Layout(old).legacy_files()
    mem = open_memory(old, embedder=embedder, compressor=FakeCompressor())
    for entry_id, vec in vectors.items():
        home = ArchiveLayout(old, "2025") if entry_id.startswith("ctx-2025") else mem.layout
        assert home.transcript_file(entry_id).read_text() == f"user: {TEXTS[entry_id]}\n"
        assert home.transcript_file(entry_id).parent.name == f"{entry_id[4:8]}-{entry_id[8:10]}"
        stored = Store(home).read_embedding(entry_id)
        assert stored["model"] == embedder.model and stored["content_hash"] == entry(entry_id).content_hash()
        assert np.array_equal(stored["embedding"], vec.astype(np.float16).astype(np.float32))  # float16, as the search cache holds it
    assert {e.id for e in mem.store.iter_entries()} == set(list(TEXTS)[:3])
    # the same entries written in the current layout from the start search alike
    init(fresh)
    for e in [entry(i) for i in list(TEXTS)[:3]]:
        Store(Layout(fresh)).write_entries([e])
    from memtool.store import ArchiveLayout as A

    archived = entry(list(TEXTS)[3])
    (fresh / "memory/archive/2025/index").mkdir(parents=True)
    (fresh / f"memory/archive/2025/index/{archived.day}.json").write_text(day_document(archived.day, [archived]))
    for home, ids in ((Layout(fresh), list(TEXTS)[:3]), (A(fresh, "2025"), list(TEXTS)[3:])):
        Store(home).write_embeddings([entry(i) for i in ids], embedder.model, np.array([vectors[i] for i in ids]))
        for i in ids:
            home.transcript_file(i).parent.mkdir(parents=True, exist_ok=True)
            home.transcript_file(i).write_text(f"user: {TEXTS[i]}\n")
    assert searches(old, embedder) == searches(fresh, embedder)
    assert migrate(old).moved == 0  # idempotent


def test_an_interrupted_migration_completes_when_run_again(tmp_path):
    embedder = FakeEmbedder()
    vectors = write_old_store(tmp_path, embedder)
    first = next(iter(vectors))
    # cut off after writing one binary vector, before removing its JSON file
    lay = Layout(tmp_path)
    Store(lay).write_embeddings([entry(first)], embedder.model, vectors[first][None, :])
    report = migrate(tmp_path)
    assert report.vectors == 4 and not lay.legacy_files()
    assert np.array_equal(Store(lay).read_embedding(first)["embedding"], vectors[first].astype(np.float16).astype(np.float32))


def test_cli_migrate_untracks_index_json_and_says_what_moved(tmp_path):
    embedder = FakeEmbedder()
    write_old_store(tmp_path, embedder)
    git = lambda *a: subprocess.run(["git", *a], cwd=tmp_path, capture_output=True, text=True, check=True)  # noqa: E731
    git("init", "-q")
    (tmp_path / "memory/index/index.json").write_text('{"version": "2.0", "entries": []}\n')
    git("add", "-f", "memory/index/index.json")
    runner = CliRunner()
    refused = runner.invoke(app, ["--root", str(tmp_path), "search", "kafka"])
    assert refused.exit_code == OldLayout.exit_code and "memory migrate" in refused.output
    planned = runner.invoke(app, ["--root", str(tmp_path), "migrate", "--dry-run"])
    assert planned.exit_code == 0 and "would move 4 transcripts" in planned.output and "would write 4 vectors" in planned.output
    done = runner.invoke(app, ["--root", str(tmp_path), "migrate"])
    assert done.exit_code == 0, done.output
    assert "move 4 transcripts" in done.output and "write 4 vectors" in done.output and "untrack memory/index/index.json" in done.output
    assert git("ls-files", "memory/index/index.json").stdout == ""  # untracked
    assert (tmp_path / "memory/index/index.json").is_file()
    assert git("check-ignore", "memory/index/index.json").stdout.strip() == "memory/index/index.json"
    again = runner.invoke(app, ["--root", str(tmp_path), "migrate"])
    assert again.exit_code == 0 and "nothing to move" in again.output


def test_an_unreadable_json_vector_is_set_aside_not_lost(tmp_path):
    write_old_store(tmp_path, FakeEmbedder())
    bad = tmp_path / "memory/index/embeddings/ctx-20260203-1b1b1b1b.json"
    bad.write_text('{"id": "torn')
    report = migrate(tmp_path)
    assert report.set_aside == ["memory/index/embeddings/ctx-20260203-1b1b1b1b.json"] and report.vectors == 3
    assert list((tmp_path / "memory/quarantine").rglob("ctx-20260203-1b1b1b1b.json"))
    assert not Layout(tmp_path).legacy_files()


def test_month_folders_hold_one_month_each(tmp_path):
    lay = Layout(tmp_path)
    assert lay.embedding_file("ctx-20261130-aa").parent.name == "2026-11"
    assert lay.transcript_file("ctx-20261201-aa").parent.name == "2026-12"
    assert lay.embedding_file("hand-made").parent.name == "undated"


def test_a_new_store_is_not_taken_for_an_old_one(tmp_path):
    init(tmp_path)
    mem = open_memory(tmp_path, embedder=FakeEmbedder(), compressor=FakeCompressor())
    mem.compress("user: Bob chose Kafka for the event queue")
    (tmp_path / "memory/transcripts/README").write_text("a note someone left\n")  # not an old transcript
    (tmp_path / "memory/index/embeddings/.x.json.tmp").write_text("{")  # a temp file
    assert not Layout(tmp_path).legacy_files() and Layout(tmp_path).require() is not None
    assert migrate(tmp_path, dry_run=True).moved == 0
