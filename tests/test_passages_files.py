"""Passages files (memory/index/passages/YYYY-MM/<id>.vec, memtool/store.py): the vectors of a kept
transcript's passages, versioned so a clone reads them instead of embedding them again. Written at
compress when every passage has a vector then, else by the fill; gone with a forget, moved by an
archive, held by a backup, merged as derived files, and never read or written through a link."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from memtool import constants as C
from memtool.app import open_memory
from memtool.archive import archive
from memtool.backup import backup, restore
from memtool.cache import discard
from memtool.chunking import chunk_lines
from memtool.doctor import Doctor
from memtool.forget import forget
from memtool.gitmerge import GITATTRIBUTES, PREVIOUS_GITATTRIBUTES, merge_bytes, setup_git
from memtool.scaffold import init
from memtool.search.fill import fill_vectors
from memtool.session_vectors import chunk_key
from memtool.store import ArchiveLayout, Layout, read_passages
from tests.conftest import RecordingEmbedder

NOW = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)


def talk(n: int, topic: str) -> str:
    return "\n\n".join(f"Alice: step {i} of the {topic} work, the {topic} job {i * 7} moved to the new queue and its alert." for i in range(n))


@pytest.fixture
def mem(root):
    init(root)
    return open_memory(root, embedder=RecordingEmbedder())


def test_a_short_sessions_file_is_written_at_compress_and_holds_every_passage(mem):
    e = mem.compress(talk(6, "billing"), when=NOW, session="s1")
    held = read_passages(mem.layout.passages_file(e.id))
    chunks = [c.text for c in chunk_lines(mem.layout.transcript_file(e.id).read_text())]
    assert held["keys"] == [chunk_key(t) for t in chunks] and (held["model"], held["dim"], held["id"]) == (mem.embedder.model, 64, e.id)
    assert np.allclose(held["vectors"], RecordingEmbedder().embed_documents(chunks), atol=1e-3)
    assert mem.layout.passages_file(e.id).read_bytes().startswith(b"memtool-passages 1 {")  # `head -1` shows its header


def test_a_long_sessions_file_is_left_to_the_fill_which_writes_it(mem):
    chunks_of = lambda e: [c.text for c in chunk_lines(mem.layout.transcript_file(e.id).read_text())]  # noqa: E731
    e = mem.compress(talk(200, "billing"), when=NOW, session="s1")
    # more passages than a compress embeds (its entry's sample), and than a change set embeds itself
    assert len(chunks_of(e)) > C.ENTRY_VECTOR_PASSAGES + C.EMBED_INLINE_MAX and not mem.layout.passages_file(e.id).exists()
    report = fill_vectors(mem.layout, mem.embedder)
    assert (report.left, report.passage_files) == (0, 1)
    assert read_passages(mem.layout.passages_file(e.id))["keys"] == [chunk_key(t) for t in chunks_of(e)]


def test_forget_removes_the_file_and_archive_moves_it(mem, root):
    old = mem.compress(talk(4, "billing"), when=NOW - timedelta(days=400), session="s0")
    gone = mem.compress(talk(4, "kafka"), when=NOW, session="s1")
    lay = mem.layout
    assert lay.passages_file(gone.id).is_file()
    report = forget(lay, [gone.id], mem.settings.compressor)
    assert lay.rel(lay.passages_file(gone.id)) in report.removed and not lay.passages_file(gone.id).exists()
    before = lay.passages_file(old.id).read_bytes()
    assert archive(lay, mem.settings, now=NOW).entries == [old.id]
    moved = ArchiveLayout(root, old.day[:4]).passages_file(old.id)
    assert not lay.passages_file(old.id).exists() and moved.read_bytes() == before


def test_a_backup_holds_the_files_and_a_restore_brings_them_back(mem, tmp_path):
    e = mem.compress(talk(4, "billing"), when=NOW, session="s1")
    data = mem.layout.passages_file(e.id).read_bytes()
    backup(mem.layout, tmp_path / "b.tar.gz")
    target = Layout(tmp_path / "restored")
    restore(target, tmp_path / "b.tar.gz")
    assert target.passages_file(e.id).read_bytes() == data


def test_a_link_is_neither_read_nor_written_through(mem, root, tmp_path):
    e = mem.compress(talk(4, "billing"), when=NOW, session="s1")
    path = mem.layout.passages_file(e.id)
    outside = tmp_path / "outside.vec"
    outside.write_bytes(path.read_bytes())
    kept = outside.read_bytes()
    path.unlink()
    path.symlink_to(outside)
    discard(mem.layout)
    clone = RecordingEmbedder()
    m = open_memory(root, embedder=clone)
    m.view()
    report = fill_vectors(m.layout, clone, every_file=True)
    assert set(clone.texts) == {c.text for c in chunk_lines(m.layout.transcript_file(e.id).read_text())}  # embedded, not read through the link
    assert report.left == 0 and [err for err in report.errors if "passages files not written" in err]
    assert outside.read_bytes() == kept and path.is_symlink()


def test_doctor_quarantines_a_file_of_no_entry(mem):
    e = mem.compress(talk(4, "billing"), when=NOW, session="s1")
    lay = mem.layout
    stray = lay.passages_file(e.id).with_name("ctx-20260301-deadbeef.vec")
    stray.write_bytes(lay.passages_file(e.id).read_bytes())
    doctor = Doctor(lay, mem.settings, mem.embedder)
    report = doctor.diagnose()
    assert report.counts["passages_files"] == 2
    assert [(p.kind, p.path, p.fix) for p in report.problems] == [("orphan", lay.rel(stray), "quarantine")]
    doctor.repair()
    assert not stray.exists() and lay.passages_file(e.id).is_file() and doctor.diagnose().healthy
    assert [p.name for p in lay.quarantine_dir.rglob("*.vec")] == [stray.name]


def test_the_merge_driver_takes_one_side_and_git_setup_replaces_the_rules_before_passages(root):
    path = f"memory/index/{C.PASSAGES_DIR}/2026-03/ctx-20260301-1a2b3c4d.vec"
    assert merge_bytes(path, b"base", b"ours", b"theirs").data == b"ours"
    assert merge_bytes(path, b"base", b"ours", b"theirs", prefer="theirs").data == b"theirs"
    assert f"memory/index/{C.PASSAGES_DIR}/**/*.vec -diff -text merge=memtool" in GITATTRIBUTES
    init(root)
    (root / C.GITATTRIBUTES_FILE).write_text("*.png binary\n" + PREVIOUS_GITATTRIBUTES[-1])
    setup_git(root)
    text = (root / C.GITATTRIBUTES_FILE).read_text()
    assert text == "*.png binary\n" + GITATTRIBUTES  # one block of memtool's rules, the user's own line kept


def test_doctor_quarantines_a_damaged_file_and_a_reindex_writes_it_anew(mem):
    from memtool.sync import sync

    e = mem.compress(talk(4, "billing"), when=NOW, session="s1")
    path = mem.layout.passages_file(e.id)
    good = path.read_bytes()
    path.write_bytes(good[:-7])  # cut short
    doctor = Doctor(mem.layout, mem.settings, mem.embedder)
    [bad] = doctor.diagnose().problems
    assert (bad.kind, bad.path, bad.fix) == ("unparsable", mem.layout.rel(path), "quarantine") and "header and vectors disagree" in bad.message
    doctor.repair()
    assert not path.exists() and doctor.diagnose().healthy
    assert sync(mem).passage_files == 1 and path.read_bytes() == good
