"""The search cache on PostgreSQL (memtool/search/pg.py), on a real server with pgvector (tests/search/conftest.py)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import threading
from datetime import datetime, timezone

import psycopg
import pytest

from memtool.app import open_memory
from memtool.cache import cache_path
from memtool.config import load_settings
from memtool.errors import ConfigError, StorageError
from memtool.forget import forget
from memtool.memory import Session
from memtool.scaffold import init
from memtool.search import pg
from memtool.search.backends import PostgresCache, SqliteCache
from memtool.search.engine import Query
from memtool.search.read import KIND_CODE
from memtool.store import Layout
from memtool.sync import sync

pytestmark = pytest.mark.postgresql  # a real server: its own step of .ci/run (`pytest -m postgresql`)

TOPICS = [
    "billing Postgres index",
    "Kafka consumer lag",
    "dark mode React",
    "Auth0 login",
    "Terraform staging",
    "Grafana alerts",
    "Postgres vacuum billing",
    "React login form",
    "Kafka staging cluster",
    "Grafana dashboards for billing",
]
QUERIES = ["billing Postgres", "Kafka lag", "login", "React dark mode", "staging Terraform cluster", "what broke with Grafana", "vacuum"]


def when(day):
    return datetime(2026, 2, day, 9, tzinfo=timezone.utc)


def sessions(topics, first_day=1):
    return [
        Session(
            text=f"Alice: we worked on the {t} today and wrote down what broke.\nBob: the {t} needs a follow-up.", when=when(first_day + i), session=f"s{i}"
        )
        for i, t in enumerate(topics)
    ]


@pytest.fixture
def filled(root, fake_embedder):
    """A root with ten sessions stored (kept transcripts too), its local SQLite cache built in full."""
    init(root)
    m = open_memory(root, embedder=fake_embedder)
    m.compress_many(sessions(TOPICS))
    m.log("Decided to keep the Postgres billing index after the vacuum test.")
    sync(m, full=True)  # the vector fill too: every document has its vector, as the PostgreSQL cache gives them
    return m


def ranked(m, text):
    return [(h.id, h.kind, h.text) for h in m.search(Query(text=text, limit=8))]


def on_pg(root, url, embedder):
    return open_memory(root, embedder=embedder, cache=url)


def rows(url, sql, args=()):
    with psycopg.connect(url) as conn:
        return conn.execute(sql, args).fetchall()


def test_search_on_postgresql_gives_the_sqlite_hits(filled, root, pg_url, fake_embedder):
    sqlite_hits = {q: ranked(filled, q) for q in QUERIES}
    m = on_pg(root, pg_url, fake_embedder)
    assert isinstance(m.cache, PostgresCache) and isinstance(filled.cache, SqliteCache)
    sync(m, full=True)  # `memory reindex` on the shared cache
    assert all(sqlite_hits[q] for q in QUERIES)
    assert {q: ranked(m, q) for q in QUERIES} == sqlite_hits
    assert rows(pg_url, "SELECT count(*) FROM docs WHERE id NOT IN (SELECT id FROM docvecs)") == [(0,)]


def test_the_hnsw_path_gives_the_same_hits_on_a_small_cache(filled, root, pg_url, fake_embedder, monkeypatch):
    sqlite_hits = {q: ranked(filled, q) for q in QUERIES}
    sync(on_pg(root, pg_url, fake_embedder), full=True)
    monkeypatch.setattr(pg, "EXACT_DENSE_DOCS", 0)  # every search asks the HNSW index (which, this small, gives every document)
    with psycopg.connect(pg_url) as conn:
        conn.execute("SET enable_seqscan = off")
        plan = " ".join(r[0] for r in conn.execute("EXPLAIN SELECT id FROM docvecs ORDER BY vec::vector(64) <=> %s::vector(64) LIMIT 5", (str([0.1] * 64),)))
    assert "docvecs_hnsw_64" in plan
    assert {q: ranked(on_pg(root, pg_url, fake_embedder), q) for q in QUERIES} == sqlite_hits


def test_a_second_clone_searches_the_shared_cache_without_building_one(filled, root, tmp_path, pg_url, fake_embedder):
    expected = {q: ranked(filled, q) for q in QUERIES}
    sync(on_pg(root, pg_url, fake_embedder), full=True)
    clone = tmp_path / "clone"
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(".cache"))  # the files a `git clone` brings, no cache
    other = on_pg(clone, pg_url, fake_embedder)
    calls = fake_embedder.calls
    assert {q: ranked(other, q) for q in QUERIES} == expected
    assert fake_embedder.calls == calls  # no document embedded (queries are embed_query), no local cache built
    assert not cache_path(other.layout).exists()


def test_a_fresh_clones_first_compress_reaches_the_shared_cache(filled, root, tmp_path, pg_url, fake_embedder):
    sync(on_pg(root, pg_url, fake_embedder), full=True)
    clone = tmp_path / "clone"
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(".cache"))
    new = on_pg(clone, pg_url, fake_embedder).compress_many(sessions(["Kubernetes ingress certificates"])).entries[0]  # into a day the cache holds
    assert rows(pg_url, "SELECT count(*) FROM entries WHERE id = %s", (new.id,)) == [(1,)]
    assert len(rows(pg_url, "SELECT id FROM entries")) == len(TOPICS) + 1  # nothing of the others lost


def test_a_clone_behind_the_cache_takes_nothing_back(filled, root, tmp_path, pg_url, fake_embedder):
    behind = tmp_path / "behind"
    shutil.copytree(root, behind, ignore=shutil.ignore_patterns(".cache"))
    on_pg(behind, pg_url, fake_embedder)  # attached before the others' new session
    sync(on_pg(root, pg_url, fake_embedder), full=True)
    on_pg(root, pg_url, fake_embedder).compress_many(sessions(["Kubernetes ingress certificates"], first_day=3))
    assert "Kubernetes" in on_pg(behind, pg_url, fake_embedder).search(Query(text="Kubernetes ingress", limit=1)).hits[0].text


def test_a_compress_and_a_forget_change_only_their_rows(filled, root, pg_url, fake_embedder, monkeypatch):
    m = on_pg(root, pg_url, fake_embedder)
    sync(m, full=True)
    before = dict(rows(pg_url, "SELECT id, source FROM docs"))
    new = m.compress_many(sessions(["Kubernetes ingress certificates"], first_day=20)).entries[0]
    after = dict(rows(pg_url, "SELECT id, source FROM docs"))
    assert set(before.items()) <= set(after.items())  # every document held keeps its row and id
    added = {s for i, s in after.items() if i not in before}
    assert len(added) == 1 and added.pop().endswith("2026-02-20.json")
    assert [h.id for h in m.search(Query(text="Kubernetes ingress", limit=3))][0] == new.id

    gone = ranked(m, "Kafka lag")[0][0]
    monkeypatch.setenv("MEMTOOL_CACHE", pg_url)  # as `memory forget` reads its settings
    forget(m.layout, [gone], "fake")
    assert rows(pg_url, "SELECT count(*) FROM docs WHERE entry = %s", (gone,)) == [(0,)]
    assert rows(pg_url, "SELECT count(*) FROM postings WHERE doc NOT IN (SELECT id FROM docs)") == [(0,)]
    assert rows(pg_url, "SELECT count(*) FROM vectors WHERE key LIKE %s", (f"entry:{gone}:%",)) == [(0,)]
    kept = {i: s for i, s in before.items() if s != rows(pg_url, "SELECT key FROM sources WHERE sha = '-'")[0][0]}
    assert set(kept.items()) <= set(dict(rows(pg_url, "SELECT id, source FROM docs")).items())
    fresh = on_pg(root, pg_url, fake_embedder)
    assert gone not in [h.id for h in fresh.search(Query(text="Kafka consumer lag", limit=10))]


def test_an_edited_day_file_replaces_its_documents(filled, root, pg_url, fake_embedder):
    m = on_pg(root, pg_url, fake_embedder)
    sync(m, full=True)
    day = next(p for p in m.layout.day_files() if "Kafka consumer" in p.read_text())
    day.write_text(day.read_text().replace("Kafka", "Pulsar"))
    fresh = on_pg(root, pg_url, fake_embedder)
    assert "Pulsar" in fresh.search(Query(text="Pulsar consumer", limit=1)).hits[0].text
    assert rows(pg_url, "SELECT count(*) FROM postings WHERE term = 'pulsar'")[0][0] > 0
    assert rows(pg_url, "SELECT count(*) FROM docs WHERE source = %s AND kind = 'entry' AND text LIKE '%%Kafka%%'", (pg.source_key(m.layout, day),)) == [(0,)]


def test_two_refreshes_at_once_leave_both_changes(root, tmp_path, pg_url, fake_embedder):
    init(root)
    base = open_memory(root, embedder=fake_embedder)
    base.compress_many(sessions(TOPICS[:4]))
    sync(on_pg(root, pg_url, fake_embedder), full=True)
    clones = []
    for n, topics in enumerate((TOPICS[4:7], TOPICS[7:])):
        clone = tmp_path / f"clone{n}"
        shutil.copytree(root, clone, ignore=shutil.ignore_patterns(".cache"))
        on_pg(clone, pg_url, fake_embedder).search(Query(text="billing"))  # attached: it has read the cache
        open_memory(clone, embedder=fake_embedder).compress_many(sessions(topics, first_day=10 + 5 * n))  # written locally, not pushed yet
        clones.append(clone)
    errors: list[BaseException] = []

    def push(clone):
        try:
            pg.refresh(pg_url, on_pg(clone, pg_url, fake_embedder).layout, fake_embedder)
        except BaseException as exc:  # noqa: BLE001 (reported by the test)
            errors.append(exc)

    threads = [threading.Thread(target=push, args=(c,)) for c in clones]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    held = rows(pg_url, "SELECT source, count(*) FROM docs GROUP BY source ORDER BY source")
    assert len(rows(pg_url, "SELECT id FROM entries")) == len(TOPICS)
    assert len(held) == len({s for s, _ in held})
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM docs d WHERE NOT EXISTS (SELECT 1 FROM postings p WHERE p.doc = d.id)").fetchone() == (0,)
    searched = on_pg(clones[0], pg_url, fake_embedder)
    found = {h.id for t in TOPICS for h in searched.search(Query(text=t, limit=3)).hits}
    assert found >= {i for (i,) in rows(pg_url, "SELECT id FROM entries")}


def test_a_password_in_the_repository_config_is_refused(root):
    init(root)
    (root / "memory" / "config.yaml").write_text("cache: postgresql://team:s3cret@db.example/memory\n")
    with pytest.raises(ConfigError, match="PGPASSWORD"):
        load_settings(root)
    (root / "memory" / "config.yaml").write_text("cache: postgresql://team@db.example/memory?password=s3cret\n")
    with pytest.raises(ConfigError, match="password"):
        load_settings(root)


def test_a_repository_config_naming_a_server_needs_approval(root):
    init(root)
    (root / "memory" / "config.yaml").write_text("cache: postgresql://team@db.example/memory\n")
    assert load_settings(root).cache == "sqlite"  # protected: sends the memory off this machine until `memory config trust`


def test_an_older_schema_is_migrated_on_connect(pg_url):
    with psycopg.connect(pg_url) as conn:
        assert pg.migrate(conn, to=1) == 0
        conn.execute(
            "INSERT INTO docs VALUES (0, 'memory/index/2026-02-01.jsonl', 'transcript', 'r', 'e', 't', '', 0, 'high', '[]', true, 0, '', 'k', 0, 1, false, 0)"
        )
        conn.commit()
    conn = pg.connect(pg_url)
    try:
        assert pg.schema_version(conn) == pg.SCHEMA_VERSION == 3
        assert conn.execute("SELECT kind_code, importance_code FROM docs").fetchall() == [(KIND_CODE["transcript"], 2)]
        conn.execute("INSERT INTO schema_version VALUES (99)")
        conn.commit()
        with pytest.raises(ConfigError, match="newer"):
            pg.connect(pg_url)
    finally:
        conn.close()


def memory(env, *args, code=0):
    out = subprocess.run([sys.executable, "-m", "memtool", *args], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == code, f"memory {' '.join(args)} -> {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


def test_the_cli_compresses_and_searches_on_the_shared_cache(root, tmp_path, env, pg_url):
    init(root)
    env = {**env, "MEMTOOL_CACHE": pg_url}
    session = tmp_path / "session.md"
    session.write_text("Alice: the Kafka consumer lag came from a slow Terraform apply.\nBob: we pinned the provider.")
    memory(env, "compress", str(session), "--session", "lag")
    assert rows(pg_url, "SELECT count(*) FROM entries") == [(1,)]
    hits = json.loads(memory(env, "search", "Kafka lag", "--json").stdout)
    assert "Kafka" in json.dumps(hits)
    local = cache_path(Layout(root))  # the local store holds only this clone's state (use counts, word counts), no search tables
    assert not local.exists() or not sqlite3.connect(local).execute("SELECT name FROM sqlite_master WHERE name = 'docs'").fetchall()
    (root / "memory" / "config.yaml").write_text("cache: postgresql://team:s3cret@db.example/memory\n")
    out = memory({k: v for k, v in env.items() if k != "MEMTOOL_CACHE"}, "search", "Kafka", code=5)
    assert "PGPASSWORD" in out.stderr and "s3cret" not in out.stdout


def test_a_view_that_holds_everything_sees_another_clones_push(filled, root, tmp_path, pg_url, fake_embedder, monkeypatch):
    sync(on_pg(root, pg_url, fake_embedder), full=True)
    monkeypatch.setattr(pg, "EXACT_DENSE_DOCS", 0)  # over it: the first search reads by id, the second holds every vector, document and posting
    clone = tmp_path / "clone"
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(".cache"))
    view = on_pg(clone, pg_url, fake_embedder)
    expected = {q: ranked(filled, q) for q in QUERIES}
    assert {q: ranked(view, q) for q in QUERIES} == expected
    index = view.view()
    assert index._all_postings and index._all_docs and index._dense is not None  # held: a search is the meta read alone
    statements = []
    monkeypatch.setattr(index.conn, "execute", lambda sql, *a, **k: statements.append(sql) or psycopg.Connection.execute(index.conn, sql, *a, **k))
    assert ranked(view, QUERIES[0]) == expected[QUERIES[0]]
    assert statements == ["SELECT key, value FROM meta"]
    on_pg(root, pg_url, fake_embedder).compress_many(sessions(["Kubernetes ingress certificates"], first_day=20))  # another clone's push
    assert "Kubernetes" in view.search(Query(text="Kubernetes ingress", limit=1)).hits[0].text  # the generation changed: read again


def test_serve_http_searches_the_shared_cache(root, tmp_path, env, pg_url):
    from tests.test_mcp_http import TOKEN, http_client, http_server

    init(root)
    clone = tmp_path / "clone"
    shutil.copytree(root, clone)  # a teammate's clone, before the session below
    env = {**env, "MEMTOOL_CACHE": pg_url}
    session = tmp_path / "session.md"
    session.write_text("Alice: the Zeppelin gateway dropped webhooks under load.\nBob: we doubled its worker pool.")
    memory(env, "compress", str(session), "--session", "zeppelin")  # pushed by this clone
    memory({**env, "MEMTOOL_ROOT": str(clone)}, "search", "anything")  # the teammate's clone attached, its files as they are
    with http_server(clone, {**env, "MEMTOOL_ROOT": str(clone)}) as (url, _):
        with http_client(url, TOKEN) as c:
            hits = c.ok("memory_search", {"query": "Zeppelin gateway webhooks"})["hits"]
    assert any("Zeppelin" in h["text"] for h in hits), hits  # from the shared cache: the clone's files do not hold it
    assert "Zeppelin" not in "".join(p.read_text() for p in (clone / "memory").rglob("*.json"))


def test_postings_over_the_held_bound_give_the_same_hits(filled, root, tmp_path, pg_url, fake_embedder, monkeypatch):
    expected = {q: ranked(filled, q) for q in QUERIES}
    sync(on_pg(root, pg_url, fake_embedder), full=True)
    monkeypatch.setattr(pg, "HELD_POSTINGS_BYTES", 1)  # every read lets go of what was held (a 1M cache's case): none a search needs
    view = on_pg(root, pg_url, fake_embedder)
    assert {q: ranked(view, q) for q in QUERIES} == expected
    assert {q: ranked(view, q) for q in reversed(QUERIES)} == {q: expected[q] for q in reversed(QUERIES)}


def test_a_view_past_the_hold_all_bound_holds_its_terms_and_gives_the_sqlite_hits(filled, root, tmp_path, pg_url, fake_embedder, monkeypatch):
    sync(on_pg(root, pg_url, fake_embedder), full=True)
    monkeypatch.setattr(pg, "HOLD_ALL_DOCS", 0)  # past it (a 336k-document cache's case): each search reads what it lacks
    monkeypatch.setattr(pg, "EXACT_DENSE_DOCS", 0)
    clone = tmp_path / "clone"
    shutil.copytree(root, clone, ignore=shutil.ignore_patterns(".cache"))
    view = on_pg(clone, pg_url, fake_embedder)
    expected = {q: ranked(filled, q) for q in QUERIES}
    assert {q: ranked(view, q) for q in QUERIES} == expected
    index = view.view()
    assert not index._all_postings and not index._all_docs and index._dense is not None  # the vectors fit HELD_VECTOR_BYTES
    statements = []
    monkeypatch.setattr(index.conn, "execute", lambda sql, *a, **k: statements.append(sql) or psycopg.Connection.execute(index.conn, sql, *a, **k))
    assert {q: ranked(view, q) for q in QUERIES} == expected  # searched again: the same hits, from the terms held
    assert statements and not [s for s in statements if "FROM postings" in s]
    on_pg(root, pg_url, fake_embedder).compress_many(sessions(["Kubernetes ingress certificates"], first_day=20))  # another clone's push
    assert "Kubernetes" in view.search(Query(text="Kubernetes ingress", limit=1)).hits[0].text  # the generation changed: read again


def test_a_server_lost_under_an_open_view_is_a_storage_error_and_the_next_search_reconnects(filled, root, pg_url, fake_embedder):
    m = on_pg(root, pg_url, fake_embedder)
    sync(m, full=True)
    expected = ranked(m, QUERIES[0])
    assert expected
    others = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    assert all(done for (done,) in rows(pg_url, others))  # the view's connection among them
    with pytest.raises(StorageError, match="PostgreSQL search cache was lost during a read"):
        m.search(Query(text=QUERIES[0], limit=8))
    assert ranked(m, QUERIES[0]) == expected  # a new view, a new connection
