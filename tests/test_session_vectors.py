"""An entry's vector is made from its whole session (memtool.session_vectors)."""

from datetime import datetime, timezone

import numpy as np

from memtool.app import open_memory
from memtool.chunking import chunk_lines
from memtool.models import Entry
from memtool.scaffold import init
from memtool.search.engine import Query
from memtool.session_vectors import chunk_key, entry_vectors, kept_sessions
from memtool.sync import sync
from tests.conftest import FakeCompressor, FakeEmbedder, RecordingEmbedder, embedding_path, read_vector_at, transcript_path

# Long enough for several passages; "museum" is said once, in a line the fake compressor's summary
# (the first sentence) and keywords (capitalised words) leave out.
MUSEUM = "\n".join(
    ["Melanie: Hi Caroline. The kids were busy all week."]
    + [f"Caroline: line {i} about painting the fence, the garden and the weather this spring." for i in range(12)]
    + ["Melanie: yesterday I took the kids to the museum to see the dinosaur skeletons."]
    + [f"Melanie: line {i} about school runs and the weather this spring." for i in range(12)]
)
CAMPING = "Melanie: Hi Caroline. We went camping by the lake and cooked on the campfire.\nCaroline: the tent held up in the rain."


def unit(v):
    return v / np.linalg.norm(v)


def entry(i: str, summary: str) -> Entry:
    return Entry(id=f"ctx-20260201-{i}", timestamp="2026-02-01T10:00:00.000Z", summary=summary)


def stored_vector(root, entry_id: str) -> np.ndarray:
    return np.array(read_vector_at(embedding_path(root, entry_id))["embedding"], dtype=np.float32)


def test_the_vector_is_the_mean_of_the_sessions_passages_or_the_entrys_own_text():
    emb = RecordingEmbedder()
    with_session, without = entry("aaaaaaaa", "Fence painting."), entry("bbbbbbbb", "Hand-written note about Kafka.")
    chunks = [c.text for c in chunk_lines(MUSEUM)]
    assert len(chunks) > 2
    vecs, passages = entry_vectors(emb, [with_session, without], {with_session.id: MUSEUM})
    assert np.allclose(vecs[0], unit(emb.embed_documents(chunks).mean(axis=0)), atol=1e-6)
    assert np.allclose(vecs[1], emb._vec(without.embed_text()), atol=1e-6)
    assert set(passages) == {chunk_key(t) for t in chunks}  # handed on to the search cache; not the entry's own text
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)


def test_passages_already_held_are_not_embedded_again():
    emb = RecordingEmbedder()
    e = entry("aaaaaaaa", "Fence painting.")
    chunks = [c.text for c in chunk_lines(MUSEUM)]
    held = {chunk_key(chunks[0]): FakeEmbedder()._vec(chunks[0])}
    vecs, passages = entry_vectors(emb, [e], {e.id: MUSEUM}, known=lambda keys: {k: held[k] for k in keys if k in held})
    assert emb.texts == chunks[1:] and chunk_key(chunks[0]) not in passages
    assert np.allclose(vecs[0], unit(FakeEmbedder().embed_documents(chunks).mean(axis=0)), atol=1e-6)


def test_compress_stores_the_session_vector_and_the_search_cache_embeds_each_passage_once(root):
    init(root)
    emb = RecordingEmbedder()
    mem = open_memory(root, embedder=emb, compressor=FakeCompressor())
    e = mem.compress(MUSEUM, when=datetime(2026, 2, 1, 10, tzinfo=timezone.utc))
    chunks = [c.text for c in chunk_lines(MUSEUM)]
    assert np.allclose(stored_vector(root, e.id), unit(FakeEmbedder().embed_documents(chunks).mean(axis=0)), atol=1e-3)  # stored as float16
    assert sorted(emb.texts) == sorted(chunks)  # not the entry's fields, and no chunk twice
    mem.search("museum")  # the cache is already up to date: nothing more to embed
    assert sorted(emb.texts) == sorted(chunks)


def test_the_session_vector_is_kept_when_the_transcript_is_not(root):
    init(root)
    mem = open_memory(root, embedder=FakeEmbedder(), compressor=FakeCompressor(), keep_transcripts=False)
    e = mem.compress(MUSEUM, when=datetime(2026, 2, 1, 10, tzinfo=timezone.utc))
    assert not transcript_path(root, e.id).exists() and kept_sessions(mem.layout, [e]) == {}
    chunks = [c.text for c in chunk_lines(MUSEUM)]
    assert np.allclose(stored_vector(root, e.id), unit(FakeEmbedder().embed_documents(chunks).mean(axis=0)), atol=1e-3)  # stored as float16


def test_an_entries_only_search_finds_a_session_by_a_word_its_entry_left_out(root):
    init(root)
    mem = open_memory(root, embedder=FakeEmbedder(), compressor=FakeCompressor())
    museum = mem.compress(MUSEUM, when=datetime(2026, 2, 1, 10, tzinfo=timezone.utc), session="1")
    mem.compress(CAMPING, when=datetime(2026, 2, 2, 10, tzinfo=timezone.utc), session="2")
    assert "museum" not in museum.embed_text()
    hits = mem.search(Query(text="dinosaur museum", limit=5, kinds=("entry",)))
    assert hits and hits[0].id == museum.id and hits[0].kind == "entry"


def test_a_resync_makes_the_vector_again_from_the_kept_transcript(root):
    init(root)
    mem = open_memory(root, embedder=FakeEmbedder(), compressor=FakeCompressor())
    e = mem.compress(MUSEUM, when=datetime(2026, 2, 1, 10, tzinfo=timezone.utc))
    before = stored_vector(root, e.id)
    embedding_path(root, e.id).unlink()
    assert sync(open_memory(root, embedder=FakeEmbedder(), compressor=FakeCompressor())).embedded == 1
    assert np.allclose(stored_vector(root, e.id), before, atol=1e-6)
    transcript_path(root, e.id).unlink()  # no transcript left: the entry's own fields
    embedding_path(root, e.id).unlink()
    sync(open_memory(root, embedder=FakeEmbedder(), compressor=FakeCompressor()))
    assert np.allclose(stored_vector(root, e.id), FakeEmbedder()._vec(e.embed_text()), atol=1e-5)


def test_a_compress_embeds_the_sessions_passages_while_its_compressor_runs(root):
    """The passages are embedded on a worker thread from the moment the text is known: a compressor
    that waits for the embedder to have started finishes (one that ran first, then the embedder, would not)."""
    import threading

    started = threading.Event()

    class Embedder(RecordingEmbedder):
        def embed_documents(self, texts):
            self.threads = [*getattr(self, "threads", []), threading.current_thread().name]
            started.set()
            return super().embed_documents(texts)

    class Compressor(FakeCompressor):
        def compress(self, text, hints=None):
            assert started.wait(10), "the passages were not being embedded while the session was compressed"
            return super().compress(text, hints)

    init(root)
    emb = Embedder()
    mem = open_memory(root, embedder=emb, compressor=Compressor())
    e = mem.compress(MUSEUM, when=datetime(2026, 2, 1, 10, tzinfo=timezone.utc))
    chunks = [c.text for c in chunk_lines(MUSEUM)]
    assert emb.threads[0] != threading.current_thread().name
    assert np.allclose(stored_vector(root, e.id), unit(FakeEmbedder().embed_documents(chunks).mean(axis=0)), atol=1e-3)
    assert sorted(emb.texts) == sorted(chunks)  # each passage once: the search cache took the worker's vectors
