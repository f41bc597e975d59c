"""memtool.retry on a real root with a scripted compressor (no network): what is completed, what
stays pending and why, and that a concurrent change is never overwritten."""

from __future__ import annotations

import pytest

from memtool.app import open_memory
from memtool.config import Settings
from memtool.errors import BadModelOutput, ProviderError, RateLimited
from memtool.memory import Session
from memtool.models import Entities
from memtool.providers import Compressed
from memtool.retry import retry, work
from memtool.scaffold import init

TEXTS = ["Alpha: we picked Redis for the cache.", "Beta: Postgres gets version 16.", "Gamma: Grafana alerts for misses."]


class Scripted:
    """A remote-like compressor: each call pops the next scripted outcome (an exception or None = answer)."""

    name = "remote"
    model = "remote-model-1"

    def __init__(self):
        self.script: list[Exception | None] = []
        self.calls: list[str] = []
        self.during = None  # called inside compress(), to simulate a concurrent writer

    def compress(self, text: str, hints=None) -> Compressed:
        self.calls.append(text)
        if self.during:
            self.during(text)
        outcome = self.script.pop(0) if self.script else None
        if outcome is not None:
            raise outcome
        first = text.strip().split(":")[0]
        return Compressed(summary=f"remote summary of {first}", keywords=[first.lower()], entities=Entities(people=["ann"]), importance="low")


@pytest.fixture
def setup(root, fake_embedder):
    init(root)
    comp = Scripted()

    def open_(**kw):
        return open_memory(root, settings=Settings(compressor="remote", **kw), compressor=comp, embedder=fake_embedder)

    return comp, open_


def stand_ins(comp: Scripted, mem, n: int = 3):
    comp.script = [ProviderError("down")] * n
    results = [mem.compress_many([Session(t, session=f"s{i}", importance="high" if i == 0 else None)]) for i, t in enumerate(TEXTS[:n])]
    entries = [r.entries[0] for r in results]
    assert all(e.pending for e in entries) and all(len(r.warnings) == 1 for r in results)  # each call's own warnings
    assert "down" in results[-1].warnings[0] and "memory retry" in results[-1].warnings[0]
    comp.calls.clear()
    return entries


def test_completes_in_place(setup, root):
    comp, open_ = setup
    mem = open_()
    old = stand_ins(comp, mem)
    report = retry(mem)
    assert report.ok and set(report.completed) == {e.id for e in old} and set(report.embedded) == set(report.completed)
    for before in old:
        after = mem.get(before.id)
        assert after.summary.startswith("remote summary of") and after.model == "remote-model-1" and not after.pending
        assert (after.timestamp, after.source_session, after.tokens_original) == (before.timestamp, before.source_session, before.tokens_original)
        assert after.entities.people == ["ann"]
        assert mem.store.read_embedding(after.id)["content_hash"] == after.content_hash()
        assert mem.layout.transcript_file(after.id).is_file()  # keep_transcripts defaults to true
    assert mem.get(old[0].id).importance == "high"  # never lowered (the user's --importance)
    assert mem.get(old[1].id).importance == old[1].importance  # the remote said low; the stand-in's is kept
    assert work(mem) == ([], [])
    assert retry(mem).completed == {}


def test_bad_answer_skips_one_quota_stops_the_rest(setup):
    comp, open_ = setup
    mem = open_()
    old = stand_ins(comp, mem)
    comp.script = [BadModelOutput("not JSON"), None, RateLimited("quota or rate limit reached")]
    report = retry(mem)
    assert len(comp.calls) == 3
    assert list(report.completed) == [old[1].id]
    assert "not JSON" in report.pending[old[0].id].reason
    assert "quota" in report.pending[old[2].id].reason and report.exit_code == BadModelOutput.exit_code

    comp.script = [RateLimited("quota or rate limit reached")]
    report = retry(mem)
    assert len(comp.calls) == 4, "after a quota error the other entries are not tried"
    assert report.pending[old[2].id].reason.startswith("not tried: quota")
    assert mem.get(old[0].id).pending and mem.get(old[2].id).pending


def test_entry_changed_meanwhile_is_left_alone(setup):
    comp, open_ = setup
    mem = open_()
    [old] = stand_ins(comp, mem, 1)

    def someone_else_edits(_text):
        with mem.store.lock():
            edited = mem.get(old.id)
            edited.summary = "edited by hand"
            mem.store.write_entries([edited])

    comp.during = someone_else_edits
    report = retry(mem)
    assert report.skipped == [old.id] and report.completed == {}
    assert mem.get(old.id).summary == "edited by hand"


def test_local_accepts_stand_ins_and_missing_transcript_is_reported(setup):
    comp, open_ = setup
    mem = open_(keep_transcripts=False)
    old = stand_ins(comp, mem, 2)
    mem.layout.transcript_file(old[0].id).unlink()
    report = retry(mem)
    assert "is gone" in report.pending[old[0].id].reason and list(report.completed) == [old[1].id]
    assert not mem.layout.transcript_file(old[1].id).exists()  # keep_transcripts: false

    report = retry(mem, provider="local")
    assert list(report.completed) == [old[0].id] and report.ok
    kept = mem.get(old[0].id)
    assert not kept.pending and kept.summary == old[0].summary and kept.model == old[0].model


def test_configured_local_does_not_pretend(root, fake_embedder):
    init(root)
    mem = open_memory(root, embedder=fake_embedder)
    failing = Scripted()
    failing.script = [ProviderError("down")]
    mem2 = open_memory(root, settings=Settings(compressor="remote"), compressor=failing, embedder=fake_embedder)
    [entry] = [mem2.compress(TEXTS[0])]
    report = retry(mem)  # configured compressor: local
    assert "--provider gemini" in report.pending[entry.id].reason and report.exit_code == 5
    assert mem.get(entry.id).pending


def test_missing_vectors_are_embedded(setup, fake_embedder):
    comp, open_ = setup
    mem = open_()
    entry = mem.compress(TEXTS[0])
    mem.layout.embedding_file(entry.id).unlink()
    assert work(mem) == ([], [entry])
    report = retry(mem)
    assert report.embedded == [entry.id] and report.ok
    assert mem.store.read_embedding(entry.id)["model"] == fake_embedder.model


def test_embedder_down_keeps_the_completion(setup, fake_embedder, monkeypatch):
    comp, open_ = setup
    mem = open_()
    [old] = stand_ins(comp, mem, 1)

    def down(texts):
        raise RateLimited("quota or rate limit reached")

    monkeypatch.setattr(fake_embedder, "embed_documents", down)
    report = retry(mem)
    assert list(report.completed) == [old.id] and "embedding failed: quota" in report.unembedded[old.id].reason
    assert not report.ok and report.exit_code == RateLimited.exit_code
    assert not mem.get(old.id).pending and mem.store.read_embedding(old.id) is None
    monkeypatch.undo()
    assert retry(mem).embedded == [old.id]


def test_never_mixes_embedding_models(setup, root, fake_embedder):
    comp, open_ = setup
    mem = open_()
    [a, b] = [mem.compress(t) for t in TEXTS[:2]]
    mem.layout.embedding_file(b.id).unlink()
    other = type(fake_embedder)(model="other-model", dim=64)
    mem2 = open_memory(root, settings=Settings(compressor="remote"), compressor=comp, embedder=other)
    report = retry(mem2)
    assert "memory reembed" in report.unembedded[b.id].reason and report.exit_code == 8
    assert mem.store.read_embedding(b.id) is None and mem.store.read_embedding(a.id)["model"] == fake_embedder.model


def test_the_watcher_completes_pending_entries(setup):
    from memtool.watch import Watcher

    comp, open_ = setup
    mem = open_()
    old = stand_ins(comp, mem, 2)
    seen = []
    watcher = Watcher(mem, on_retry=seen.append, retry_interval=0)
    watcher.sync_now()  # what `memory watch` does on start and after each change
    assert [r.completed for r in seen] == [{e.id: "remote-model-1" for e in old}]
    assert not any(mem.get(e.id).pending for e in old)
    watcher.sync_now()  # nothing pending any more: no retry run, no call
    assert len(seen) == 1 and len(comp.calls) == 2


def test_the_watcher_does_not_hammer_a_failing_provider(setup):
    from memtool.watch import Watcher

    comp, open_ = setup
    mem = open_()
    old = stand_ins(comp, mem, 1)
    comp.script = [RateLimited("quota exceeded")] * 5
    watcher = Watcher(mem, on_retry=lambda r: None, retry_interval=3600)
    watcher.sync_now()
    watcher.sync_now()  # within the interval: not retried again
    assert len(comp.calls) == 1 and mem.get(old[0].id).pending
