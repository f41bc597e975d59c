"""`memory reindex` / `memory reembed`: the index follows the files, on real files in a tmp root."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timezone

import numpy as np
import pytest
from typer.testing import CliRunner

from memtool.app import open_memory
from memtool.chunking import chunk_lines
from memtool.cli.main import app
from memtool.config import load_settings
from memtool.errors import DimensionMismatch, ProviderError
from memtool.index_json import index_document
from memtool.scaffold import init
from memtool.store import Store
from memtool.sync import persist_embedder, sync
from tests.conftest import FakeCompressor, FakeEmbedder, RecordingEmbedder, embedding_path, read_vector_at, transcript_path

TEXTS = [
    "We decided to move billing to Postgres. Alice owns the migration.",
    "The Kubernetes deploy failed because of a missing secret. Bob fixed the Helm chart.",
    "Carol profiled the React bundle and removed moment.js to shrink it.",
    "Dana set up Stripe webhooks for invoices and added retries.",
]


def stands_for(root, e) -> list[str]:
    """The texts an entry's vector is made from: its kept transcript's passages, else its own fields."""
    path = transcript_path(root, e.id)
    return [c.text for c in chunk_lines(path.read_text())] if path.is_file() else [e.embed_text()]


def entry_texts(emb: RecordingEmbedder, entries, root) -> list[str]:
    """What `emb` embedded for entries' vectors (the search cache also embeds Markdown and other chunks)."""
    wanted = {t for e in entries for t in stands_for(root, e)}
    return sorted(t for t in emb.texts if t in wanted)


def when(day: int) -> datetime:
    return datetime(2026, 2, day, 10, 0, tzinfo=timezone.utc)


def mem_with(root, embedder=None):
    return open_memory(root, embedder=embedder or RecordingEmbedder(), compressor=FakeCompressor())


@pytest.fixture
def store(root):
    """A root with four entries over three days, a daily log and MEMORY.md, synced once."""
    init(root)
    mem = mem_with(root)
    entries = [mem.compress(t, when=when(3 + i % 3)) for i, t in enumerate(TEXTS)]
    mem.log("Remember: the staging database is read-only on Fridays.", when=datetime(2026, 2, 5, 9, 0).astimezone())
    report = sync(mem_with(root))
    assert report.first and not report.errors
    return entries


def day_path(root, day: int):
    return root / f"memory/index/2026-02-{day:02d}.json"


def edit_day(root, day: int, fn) -> None:
    path = day_path(root, day)
    doc = json.loads(path.read_text())
    fn(doc["entries"])
    path.write_text(json.dumps(doc, indent=2) + "\n")


def index_ids(root) -> list[str]:
    return [e["id"] for e in json.loads((root / "memory/index/index.json").read_text())["entries"]]


def search_refs(root, text: str, embedder=None) -> list[str]:
    return [h.id for h in mem_with(root, embedder).search(text, limit=10)]


def test_no_change_sync_does_nothing(root, store):
    emb = RecordingEmbedder()
    report = sync(mem_with(root, emb))
    assert not report.changed and not report.first and report.errors == [] and report.touched == []
    assert emb.calls == 0 and report.line().startswith("up to date")


def test_hand_edited_summary_reembeds_that_entry_only(root, store):
    target = store[0]
    # same length as the original: a size+mtime check alone could miss it, the content hash does not
    edit_day(root, 3, lambda es: [e.update(summary=e["summary"].replace("Postgres", "Cobolzz")) for e in es if e["id"] == target.id])
    emb = RecordingEmbedder()
    report = sync(mem_with(root, emb))
    assert report.entries.changed == [target.id] and not report.entries.added and not report.entries.removed
    assert report.embedded == 1 and emb.texts == stands_for(root, target)  # made again, from its transcript
    # the versioned vector file is written once (a correction never rewrites what a teammate's forget
    # deletes); the edit's vector is in the search cache, and a second sync embeds nothing
    stored = read_vector_at(embedding_path(root, target.id))
    assert stored["content_hash"] == target.content_hash() != Store(mem_with(root).layout).get(target.id).content_hash()
    assert sync(mem_with(root, RecordingEmbedder())).embedded == 0
    assert report.index_rebuilt == "stale"
    assert "Cobolzz" in (root / "memory/index/index.json").read_text()
    assert search_refs(root, "Cobolzz")[0] == target.id


def test_entry_written_by_hand_or_pulled_is_embedded(root, store):
    pulled = {"id": "ctx-20260209-abcdef12", "timestamp": "2026-02-09T08:00:00.000Z", "summary": "Erin switched the queue to Kafka with idempotent consumers."}
    day_path(root, 9).write_text(json.dumps({"date": "2026-02-09", "entries": [pulled]}))
    emb = RecordingEmbedder()
    report = sync(mem_with(root, emb))
    assert report.entries.added == [pulled["id"]] and report.embedded == 1 and emb.texts == [pulled["summary"]]
    assert embedding_path(root, pulled["id"]).is_file()
    assert pulled["id"] in index_ids(root)
    assert search_refs(root, "Kafka idempotent consumers")[0] == pulled["id"]


def test_deleted_entry_drops_its_embedding_and_search_docs(root, store):
    gone = store[1]
    edit_day(root, 4, lambda es: es.clear())
    report = sync(mem_with(root))
    assert report.entries.removed == [gone.id] and report.dropped == 1
    assert not embedding_path(root, gone.id).exists()
    assert gone.id not in index_ids(root)
    assert gone.id not in search_refs(root, "Kubernetes Helm secret")


def test_malformed_day_file_is_reported_with_line_and_skipped(root, store):
    bad = day_path(root, 5)
    kept = [e.id for e in store if e.day == "2026-02-05"]
    lines = bad.read_text().splitlines()
    lines[3] = lines[3] + " oops,"  # broken JSON on line 4
    bad.write_text("\n".join(lines) + "\n")
    pulled = {"id": "ctx-20260203-0000beef", "timestamp": "2026-02-03T11:00:00.000Z", "summary": "Frank pinned the Node version to 20."}
    edit_day(root, 3, lambda es: es.append(pulled))
    report = sync(mem_with(root))
    assert len(report.errors) == 1 and report.errors[0].startswith(f"{bad}:4:")
    assert report.entries.added == [pulled["id"]] and report.embedded == 1  # the rest went on
    assert set(kept) <= set(index_ids(root))  # nothing indexed before is lost
    assert all(embedding_path(root, i).is_file() for i in kept)
    assert sync(mem_with(root)).errors == report.errors  # still reported while broken, without re-reading

    # a schema error inside one entry points at that entry's line
    doc = {
        "date": "2026-02-05",
        "entries": [
            {"id": kept[0], "timestamp": "2026-02-05T10:00:00.000Z", "summary": "ok"},
            {"id": "ctx-20260205-00000002", "timestamp": "2026-02-05T11:00:00.000Z"},
        ],
    }
    text = json.dumps(doc, indent=2)
    bad.write_text(text)
    report = sync(mem_with(root))
    line = text.splitlines().index("    {", 4) + 1  # the second entry object
    assert report.errors == [f"{bad}:{line}: entry 2: missing summary"]

    del doc["entries"][1]
    bad.write_text(json.dumps(doc, indent=2))
    report = sync(mem_with(root))
    assert report.errors == [] and report.entries.changed == [kept[0]]


def test_non_utf8_markdown_is_reported_and_others_indexed(root, store):
    (root / "memory/notes").mkdir()
    (root / "memory/notes/bad.md").write_bytes(b"# Notes\nline two\ncaf\xe9 latte\n")
    (root / "memory/notes/good.md").write_text("# Good\nThe Grafana dashboard lives in the ops folder.\n")
    report = sync(mem_with(root))
    assert report.markdown.added == ["memory/notes/bad.md", "memory/notes/good.md"]
    assert report.errors == [f"{root / 'memory/notes/bad.md'}:3: not UTF-8 (invalid continuation byte); not searchable"]
    assert any("Grafana" in h.text for h in mem_with(root).search("Grafana dashboard"))


@pytest.mark.parametrize("damage", ["delete", "conflict", "stale"])
def test_index_json_is_rebuilt(root, store, damage):
    index = root / "memory/index/index.json"
    good = json.loads(index.read_text())["entries"]
    if damage == "delete":
        index.unlink()
    elif damage == "conflict":
        text = index.read_text()
        index.write_text(text.replace('  "entries": [', '<<<<<<< HEAD\n  "entries": [\n=======\n  "entries": [\n>>>>>>> theirs', 1))
    else:
        doc = json.loads(index.read_text())
        doc["entries"] = doc["entries"][1:]
        index.write_text(json.dumps(doc, indent=2))
    edit_day(root, 3, lambda es: [e.update(summary="We moved billing to Cobolzz.") for e in es if e["id"] == store[0].id])
    good[0 if good[0]["id"] == store[0].id else 1]["summary"] = "We moved billing to Cobolzz."
    report = sync(mem_with(root))
    assert report.index_rebuilt == {"delete": "missing", "conflict": "git conflict markers", "stale": "stale"}[damage]
    assert json.loads(index.read_text())["entries"] == good
    assert sync(mem_with(root)).index_rebuilt == ""


def index_text(root) -> str:
    """index.json without its last_updated stamp: what a patch and a rebuild must agree on byte for byte."""
    return re.sub(r'"last_updated": "[^"]*"', "", (root / "memory/index/index.json").read_text())


def rebuilt_index_text(root) -> str:
    """index.json as written from the day files: index_document over every entry they hold, an id once."""
    mem = mem_with(root)
    text = index_document(mem.settings.compressor, {e.id: e for e in mem.store.iter_entries()}.values()).decode("utf-8")
    return re.sub(r'"last_updated": "[^"]*"', "", text)


def test_index_json_after_edits_matches_the_day_files(root, store):
    """A hand edit, a deleted and an added day file: index.json, written from the cache,
    ends as index_document over every day file's entries would write it."""
    target = store[0]
    edit_day(root, 3, lambda es: [e.update(summary="We moved billing to Cobolzz.") for e in es if e["id"] == target.id])
    day_path(root, 4).unlink()
    pulled = {"id": "ctx-20260209-abcdef12", "timestamp": "2026-02-09T08:00:00.000Z", "summary": "Erin switched the queue to Kafka."}
    day_path(root, 9).write_text(json.dumps({"date": "2026-02-09", "entries": [pulled]}))
    report = sync(mem_with(root))
    assert report.index_rebuilt == "stale"
    assert sync(mem_with(root)).index_rebuilt == ""
    patched = index_text(root)
    assert "Cobolzz" in patched and store[1].id not in patched and pulled["id"] in patched
    assert patched == rebuilt_index_text(root)


def test_index_json_written_by_compress_is_rewritten_by_the_next_sync(root, store):
    """A compress since the last sync rewrote index.json; a hand edit after it shows in the next sync's."""
    mem_with(root).compress("Dana rotated the TLS certificates on the edge proxies.", when=when(9))
    edit_day(root, 3, lambda es: [e.update(summary="We moved billing to Cobolzz.") for e in es if e["id"] == store[0].id])
    report = sync(mem_with(root))
    assert report.index_rebuilt == "stale"
    assert "Cobolzz" in index_text(root) and index_text(root) == rebuilt_index_text(root)


def test_same_size_edit_right_after_compress_is_not_missed(root, store):
    """A day file whose stat is still the one the cache read it at (coarse mtimes), but whose
    content the sync's scan finds changed, is read again."""
    entry = mem_with(root).compress("Dana rotated the TLS certificates on the edge proxies.", when=when(9))
    path = day_path(root, 9)
    st = path.stat()
    path.write_text(path.read_text().replace("TLS", "SSH"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size
    assert sync(mem_with(root)).index_rebuilt == "stale"
    index = json.loads((root / "memory/index/index.json").read_text())
    assert "SSH" in next(d["summary"] for d in index["entries"] if d["id"] == entry.id)
    assert index_text(root) == rebuilt_index_text(root)


def test_index_json_lists_an_id_in_two_day_files_once(root, store):
    """The store holds one entry per id (the copy read last); the day files' index.json keeps the later file's."""
    twin = json.loads(day_path(root, 4).read_text())["entries"][0]
    edit_day(root, 5, lambda es: es.append(twin))
    report = sync(mem_with(root))
    assert report.index_rebuilt == ""  # index.json already lists the id, once
    assert index_ids(root).count(twin["id"]) == 1 and index_text(root) == rebuilt_index_text(root)


def test_index_json_is_rebuilt_while_a_day_file_is_unreadable(root, store):
    """index.json keeps the entries of an unreadable day file from the old index.json."""
    kept = [e.id for e in store if e.day == "2026-02-04"]
    day_path(root, 4).write_text("{ not json")
    edit_day(root, 3, lambda es: [e.update(summary="We moved billing to Cobolzz.") for e in es if e["id"] == store[0].id])
    report = sync(mem_with(root))
    assert report.index_rebuilt == "stale" and len(report.errors) == 1
    assert "Cobolzz" in index_text(root) and set(kept) <= set(index_ids(root))


def test_full_rebuilds_everything(root, store):
    emb = RecordingEmbedder()
    report = sync(mem_with(root, emb), full=True)
    assert report.embedded == len(store) and entry_texts(emb, store, root) == sorted(t for e in store for t in stands_for(root, e))
    assert report.index_rebuilt == "--full" and report.search_rebuilt


def test_markdown_create_edit_delete(root, store):
    notes = root / "memory/project.md"
    notes.write_text("# Project\nThe release train leaves on Tuesdays.\n")
    assert sync(mem_with(root)).markdown.added == ["memory/project.md"]
    notes.write_text("# Project\nThe release train leaves on Thursdays now.\n")
    report = sync(mem_with(root))
    assert report.markdown.changed == ["memory/project.md"] and report.search_rebuilt
    assert any("Thursdays" in h.text for h in mem_with(root).search("release train"))
    notes.unlink()
    assert sync(mem_with(root)).markdown.removed == ["memory/project.md"]
    assert not any("release train" in h.text for h in mem_with(root).search("release train Thursdays"))


def test_transcript_edited_in_place_is_reindexed(root, store):
    """An editor writing into a kept transcript (same inode, no rename) changes no folder's mtime."""
    target = store[1]
    path = transcript_path(root, target.id)
    inode = path.stat().st_ino
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("Later Bob found the Helm chart pinned an old Quokkadb image.\n")
    assert path.stat().st_ino == inode
    report = sync(mem_with(root))
    assert report.search_rebuilt and not report.entries and report.embedded == 0
    assert search_refs(root, "Quokkadb")[0] == target.id
    assert not sync(mem_with(root)).search_rebuilt
    delta = search_refs(root, "Quokkadb Helm chart secret")
    sync(mem_with(root), full=True)
    assert search_refs(root, "Quokkadb Helm chart secret") == delta  # the delta answers as a full rebuild does

    # A search checks day and Markdown files and the transcripts folder, not a stat per transcript
    # (that would cost a cold `memory search` ~0.07 s at 10k entries): the next sync brings the edit.
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("The image was rebuilt with Zephyrix.\n")
    assert target.id not in search_refs(root, "Zephyrix")
    assert sync(mem_with(root)).search_rebuilt
    assert search_refs(root, "Zephyrix")[0] == target.id


def test_an_edit_a_sync_saw_stays_when_a_search_rebuilds_the_delta(root, store):
    """A search's own refresh takes no transcript stats; the delta it rebuilds after a compress keeps
    the transcripts the last sync found edited."""
    target = store[2]
    with open(transcript_path(root, target.id), "a", encoding="utf-8") as fh:
        fh.write("The fix was a Quokkadb connection pool.\n")
    assert sync(mem_with(root)).search_rebuilt
    mem = mem_with(root)
    mem.compress("Dana rotated the TLS certificates on the edge proxies.", when=when(9))  # a new day file
    assert search_refs(root, "TLS certificates edge proxies")[0] != target.id  # that search rebuilt the delta
    assert search_refs(root, "Quokkadb connection pool")[0] == target.id


def test_unchanged_stat_is_trusted_until_full(root, store):
    """The manifest trusts (size, mtime) of files older than the racy window; --full re-reads all."""
    path = day_path(root, 3)
    old = path.stat().st_mtime_ns - 10 * 10**9
    os.utime(path, ns=(old, old))
    sync(mem_with(root))  # records the back-dated stat
    text = path.read_text()
    path.write_text(text.replace("Postgres", "Redshift"))  # same size
    os.utime(path, ns=(old, old))
    assert not sync(mem_with(root)).entries  # by design: stat unchanged, file not re-read
    assert sync(mem_with(root), full=True).embedded == len(store)
    assert "Redshift" in (root / "memory/index/index.json").read_text()


def test_reembed_with_another_model(root, store):
    other = RecordingEmbedder(model="other", dim=32)
    with pytest.raises(DimensionMismatch, match="memory reembed"):
        mem_with(root, FakeEmbedder(model="other", dim=32)).search("Postgres")  # a query never mixes models
    report = sync(mem_with(root, other))
    assert report.embedded == len(store) and entry_texts(other, store, root) == sorted(t for e in store for t in stands_for(root, e))
    for e in store:
        data = read_vector_at(embedding_path(root, e.id))
        assert (data["model"], data["dim"], len(data["embedding"])) == ("other", 32, 32)
    assert search_refs(root, "Stripe webhooks invoices", FakeEmbedder(model="other", dim=32))[0] == store[3].id
    assert sync(mem_with(root, other)).embedded == 0


def test_interrupted_reembed_resumes(root, store):
    failing = RecordingEmbedder(model="other", dim=32, fail_after=1)
    with pytest.raises(ProviderError):
        sync(mem_with(root, failing), batch=2)
    assert len(entry_texts(failing, store, root)) == 2
    done = {e.id for e in store if read_vector_at(embedding_path(root, e.id))["model"] == "other"}
    assert len(done) == 2
    again = RecordingEmbedder(model="other", dim=32)
    report = sync(mem_with(root, again), batch=2)
    redone = {p.stem for p in report.touched if p.parent.parent.name == "embeddings"}
    assert report.embedded == len(store) - 2 and len(redone) == 2 and not done & redone
    models = {read_vector_at(p)["model"] for p in (root / "memory/index/embeddings").rglob("*.vec")}
    assert models == {"other"}


def test_conflicted_embedding_file_is_reembedded(root, store):
    path = embedding_path(root, store[2].id)
    tmp = path.with_name("merge.tmp")
    tmp.write_bytes(b"<<<<<<< HEAD\n" + path.read_bytes() + b"=======\n{}\n>>>>>>> theirs\n")
    os.replace(tmp, path)  # as git writes it: a new file (an in-place edit is only caught by --full)
    emb = RecordingEmbedder()
    report = sync(mem_with(root, emb))
    assert report.embedded == 1 and read_vector_at(path)["content_hash"] == store[2].content_hash()


def test_batch_embedding_files_match_single_writes(root):
    init(root)
    mem = mem_with(root)
    entries = [mem.compress(t, when=when(3)) for t in TEXTS]
    rng = np.random.default_rng(0)
    # unit-norm floats, tiny ones (printed with exponents), exact ties at the 7th decimal
    vectors = np.stack([rng.normal(size=256), rng.normal(size=256) * 1e-5, np.full(256, 0.0000005) * np.arange(256), rng.normal(size=256) * 1e3])
    singles = []
    for e, v in zip(entries, vectors):
        mem.store.write_embedding(e, "m", v)
        singles.append(mem.layout.embedding_file(e.id).read_bytes())
    assert mem.store.write_embeddings(entries, "m", vectors) == []  # already identical: nothing rewritten
    for e in entries:
        mem.layout.embedding_file(e.id).unlink()
    paths = mem.store.write_embeddings(entries, "m", vectors)
    assert [p.read_bytes() for p in paths] == singles


@pytest.mark.real_embedder  # what `memory init` pins is the subject
def test_persist_embedder_keeps_comments(root):
    init(root)
    layout = mem_with(root).layout
    before = layout.config_file.read_text()
    persist_embedder(layout, "gemini")
    assert load_settings(root, env={}).embedder == "gemini"
    persist_embedder(layout, "wordllama")
    after = layout.config_file.read_text()
    assert re.search(r"^embedder: (e5|wordllama)$", before, re.M)  # init wrote the store's embedder
    assert after == re.sub(r"^embedder: .*$", "embedder: wordllama", before, flags=re.M)  # replaced in place, comments kept


def test_cli_reindex_json_and_reembed(root, store, monkeypatch):
    monkeypatch.setenv("MEMTOOL_EMBEDDER", "wordllama")
    runner = CliRunner()
    out = runner.invoke(app, ["reindex", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    # the store was embedded with the fake embedder: wordllama re-embeds every entry
    assert data["embedded"] == len(store) and data["model"].startswith("wordllama") and data["errors"] == []
    out = runner.invoke(app, ["reembed", "--provider", "wordllama"])
    lines = out.stdout.splitlines()  # config said `auto`: wordllama is written there; its vectors are all in place
    assert out.exit_code == 0 and lines[0].endswith("embedder set to wordllama") and lines[1].startswith("up to date"), out.output
    assert load_settings(root, env={}).embedder == "wordllama"


def test_the_manifest_as_stored_reads_into_typed_records_and_saves_back_the_same(tmp_path):
    """The sync manifest's stored form (version 3: [size, mtime_ns, sha, error, {id: hash}] per day
    file, [size, mtime_ns, sha, error] per Markdown file, [size, mtime_ns, content hash] per vector
    file) is read into Seen records and saved back byte for byte."""
    from memtool.cache import read_state, write_state
    from memtool.fsutil import FileSig
    from memtool.store import Layout
    from memtool.sync_scan import Manifest, Seen

    root = tmp_path / "r"
    init(root)
    layout = Layout(root)
    stored = {
        "version": 3,
        "model": "m",
        "written_ns": 5,
        "index_sig": [10, 20],
        "emb_dir_ns": None,
        "days": {"2026-01-01.json": [1, 2, "aa", "", {"ctx-1": "h1"}], "2026-01-02.json": [3, 4, "", "bad: not UTF-8", {}]},
        "markdown": {"memory/MEMORY.md": [5, 6, "bb", ""]},
        "vectors": {"ctx-1": [7, 8, "h1"]},
    }
    text = json.dumps(stored, separators=(",", ":"))
    assert write_state(layout, [("INSERT OR REPLACE INTO sync_state VALUES ('manifest', ?)", [(text,)])])
    man = Manifest.load(layout)
    assert man is not None and man.index_sig == FileSig(10, 20)
    assert man.days["2026-01-01.json"] == Seen(FileSig(1, 2), "aa", "", {"ctx-1": "h1"})
    assert man.days["2026-01-02.json"].error == "bad: not UTF-8"
    assert man.markdown["memory/MEMORY.md"] == Seen(FileSig(5, 6), "bb", "")
    assert man.vectors["ctx-1"] == Seen(FileSig(7, 8), "h1")
    man.save(layout)
    (saved,) = read_state(layout, "SELECT data FROM sync_state") or [("",)]
    assert json.loads(saved[0]) == {**stored, "written_ns": man.written_ns}
    assert saved[0] == text.replace('"written_ns":5', f'"written_ns":{man.written_ns}')
