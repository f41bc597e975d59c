"""`memory export` and `memory backup` / `memory restore`: round trips, refusals, hostile archives."""

from __future__ import annotations

import csv
import io
import json
import tarfile
from datetime import datetime, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memtool import constants as C
from memtool.app import open_memory
from memtool.backup import backup, restore
from memtool.cli.main import app
from memtool.dayfile import sort_entries
from memtool.errors import BadInput, WouldOverwrite
from memtool.export import export_text
from memtool.memory import Session
from memtool.providers import Compressed
from memtool.scaffold import init
from memtool.store import Layout, Store

runner = CliRunner()


class ListCompressor:
    """First line: summary; 'decided:' / 'todo:' lines: decisions / action items; words after 'topic:' are topics."""

    name = "local"
    model = "test-lists"

    def compress(self, text: str, hints=None) -> Compressed:
        lines = text.splitlines()
        pick = lambda tag: [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith(tag + ":")]  # noqa: E731
        return Compressed(
            summary=lines[0],
            keywords=sorted({w.lower() for w in text.split() if w.istitle()})[:5],
            topics=pick("topic"),
            decisions=pick("decided"),
            action_items=pick("todo"),
        )


SESSIONS = [
    ("2026-03-02T09:15", "billing", 'Billing moved to Postgres, "finally", with care.\ndecided: use Postgres\ntodo: write the migration\ntopic: database'),
    ("2026-03-02T16:40", "main", "Cache warmed up; Redis latency halved.\ndecided: keep Redis\ndecided: add a TTL\ntopic: performance"),
    ("2026-03-05T11:00", "infra", "Line one of a summary\ntopic: infrastructure\ntodo: rotate keys"),
]


def build(root: Path, fake_embedder) -> None:
    init(root)
    mem = open_memory(root, embedder=fake_embedder, compressor=ListCompressor())
    mem.compress_many([Session(text=t, when=datetime.fromisoformat(w).replace(tzinfo=timezone.utc), session=s) for w, s, t in SESSIONS])
    mem.log("decided to try the new deploy script", when=datetime(2026, 3, 2, 10, 0).astimezone())
    mem.log("deploy script works", when=datetime(2026, 3, 5, 12, 0).astimezone())
    (root / "MEMORY.md").write_text("# MEMORY\n\n## Key decisions\n- Postgres for billing (hand-written)\n", encoding="utf-8")
    (root / "USER.md").write_bytes("# USER\r\nPrefers tabs. Ünïcode.\r\n".encode())  # CRLF and non-ASCII kept byte for byte
    mem.search("Postgres")  # builds memory/.cache, which a backup must leave out


def versioned(root: Path) -> dict[str, bytes]:
    files = {n: (root / n).read_bytes() for n in C.LAYER3_FILES if (root / n).is_file()}
    for p in (root / "memory").rglob("*"):
        rel = p.relative_to(root)
        if p.is_file() and rel.parts[1] not in (C.CACHE_DIR, C.LOCK_FILE):
            files[rel.as_posix()] = p.read_bytes()
    return files


@pytest.fixture
def store(root, fake_embedder):
    build(root, fake_embedder)
    return root


def cli(*args, root=None):
    return runner.invoke(app, [*(["--root", str(root)] if root else []), *args])


# -- export ------------------------------------------------------------------------------------------
def test_jsonl_round_trips_every_field(store):
    entries = sort_entries(Store(Layout(store)).iter_entries())
    out = cli("export", "--format", "jsonl")
    assert out.exit_code == 0, out.output
    parsed = [json.loads(line) for line in out.stdout.splitlines()]
    assert parsed == [e.to_dict() for e in entries] and len(parsed) == 3


def test_csv_one_row_per_entry_lists_joined(store, tmp_path):
    target = tmp_path / "out" / "entries.csv"
    res = cli("export", "--format", "csv", "--output", str(target))
    assert res.exit_code == 0 and "exported 3 entries" in res.output
    with open(target, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 3 and list(rows[0]) == list(C.EXPORT_CSV_COLUMNS)
    first, second = rows[0], rows[1]
    assert first["summary"] == 'Billing moved to Postgres, "finally", with care.'  # quotes and commas survive
    assert first["session"] == "billing" and first["decisions"] == "use Postgres" and first["action_items"] == "write the migration"
    assert second["decisions"] == "keep Redis; add a TTL" and second["timestamp"].startswith("2026-03-02T16:40")


def test_markdown_digest_grouped_by_day(store):
    text = cli("export", "-f", "md").stdout
    assert [line for line in text.splitlines() if line.startswith("## ")] == ["## 2026-03-02", "## 2026-03-05"]
    assert text.index("Billing moved") < text.index("Cache warmed") < text.index("## 2026-03-05") < text.index("Line one")
    assert "- Decision: add a TTL" in text and "- Action: rotate keys" in text and "3 entries from 2026-03-02 to 2026-03-05" in text


def test_export_rejects_unknown_format():
    with pytest.raises(BadInput, match="jsonl, csv, md"):
        export_text([], "xml")
    assert export_text([], "csv").strip() == ",".join(C.EXPORT_CSV_COLUMNS) and export_text([], "jsonl") == ""


# -- backup and restore ------------------------------------------------------------------------------
def test_backup_restore_round_trip_byte_identical_and_same_search(store, tmp_path, fake_embedder):
    archive = tmp_path / "b.tar.gz"
    res = cli("backup", str(archive), "--json")
    assert res.exit_code == 0, res.output
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert names == sorted(names) and "MEMORY.md" in names and "memory/index/2026-03-02.json" in names
    assert not any(n.startswith(("memory/.cache", "memory/.lock")) for n in names)

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    res = cli("restore", str(archive), root=fresh)
    assert res.exit_code == 0, res.output
    assert versioned(fresh) == versioned(store)
    assert (fresh / "memory/index/embeddings").is_dir()
    queries = ["Postgres migration", "Redis latency", "rotate keys", "deploy script"]
    before = [[h.id for h in open_memory(store, embedder=fake_embedder).search(q, limit=10)] for q in queries]
    after = [[h.id for h in open_memory(fresh, embedder=fake_embedder).search(q, limit=10)] for q in queries]
    assert after == before and all(before)


def test_backup_is_deterministic_and_never_contains_itself(store, tmp_path):
    a, b = tmp_path / "a.tar.gz", tmp_path / "b.tar.gz"
    backup(Layout(store), a)
    backup(Layout(store), b)
    assert a.read_bytes() == b.read_bytes()
    inside = store / "memory" / "self.tar.gz"
    backup(Layout(store), inside)
    backup(Layout(store), inside)  # the second run sees the first archive in memory/ and must skip it
    with tarfile.open(inside) as tar:
        assert "memory/self.tar.gz" not in tar.getnames()


def test_restore_refuses_to_overwrite_then_force_quarantines(store, tmp_path):
    archive = tmp_path / "b.tar.gz"
    backup(Layout(store), archive)
    original = (store / "MEMORY.md").read_bytes()
    (store / "MEMORY.md").write_text("# MEMORY\nchanged after the backup\n")
    day = store / "memory/index/2026-03-05.json"
    day.unlink()

    res = cli("restore", str(archive))
    assert res.exit_code == WouldOverwrite.exit_code
    assert "MEMORY.md" in res.output and "--force" in res.output and "Nothing was written" in res.output
    assert not day.exists() and (store / "MEMORY.md").read_text().endswith("changed after the backup\n")

    (store / "memory/2026-03-09.md").write_text("# 2026-03-09\n- a log the backup does not have\n")
    res = cli("restore", str(archive), "--force", "--json")
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert sorted(rep["restored"]) == ["MEMORY.md", "memory/index/2026-03-05.json"]
    assert rep["not_in_backup"] == ["memory/2026-03-09.md"]
    [kept] = rep["quarantined"]
    assert kept.startswith("memory/quarantine/") and kept.endswith("/MEMORY.md")
    assert (store / kept).read_text().endswith("changed after the backup\n")
    assert (store / "MEMORY.md").read_bytes() == original and day.is_file()
    again = restore(Layout(store), archive)  # everything identical now: nothing to do, no --force needed
    assert again.restored == [] and again.quarantined == [] and again.unchanged > 5


def _archive(path: Path, *members: tuple[tarfile.TarInfo, bytes | None]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        ok = tarfile.TarInfo("memory/index/2026-01-01.json")
        ok.size = 2
        tar.addfile(ok, io.BytesIO(b"{}"))
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _info(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


@pytest.mark.parametrize(
    "member, data, why",
    [
        (_info("/etc/evil"), b"x", "absolute path"),
        (_info("memory/../../evil"), b"x", "'..'"),
        (_info("memory/link", tarfile.SYMTYPE, "/etc/passwd"), None, "link"),
        (_info("memory/hard", tarfile.LNKTYPE, "memory/index/2026-01-01.json"), None, "link"),
        (_info("memory/dev", tarfile.CHRTYPE), None, "device"),
        (_info("memory/fifo", tarfile.FIFOTYPE), None, "device"),
        (_info("evil.sh"), b"x", "not part of a memtool backup"),
        (_info("memory/.cache/x"), b"x", "not part of a memtool backup"),
        (_info("memory/index/2026-01-01.json"), b"{}", "twice"),
    ],
)
def test_restore_rejects_hostile_archives_before_writing(root, tmp_path, member, data, why):
    archive = _archive(tmp_path / "bad.tar.gz", (member, data))
    res = cli("restore", str(archive))
    assert res.exit_code == BadInput.exit_code and why in res.output, res.output
    assert list(root.iterdir()) == []  # nothing written, not even the good member
    assert not (tmp_path / "evil").exists() and not Path("/etc/evil").exists()


def test_restore_rejects_non_archives(root, tmp_path):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not a tarball at all" * 10)
    res = cli("restore", str(junk))
    assert res.exit_code == BadInput.exit_code and "not a .tar.gz archive" in res.output
    res = cli("restore", str(tmp_path / "missing.tar.gz"))
    assert res.exit_code == BadInput.exit_code and "no such file" in res.output
    with tarfile.open(tmp_path / "other.tar.gz", "w:gz") as tar:
        info = _info("MEMORY.md")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    res = cli("restore", str(tmp_path / "other.tar.gz"))
    assert res.exit_code == BadInput.exit_code and "not a memtool backup" in res.output and list(root.iterdir()) == []
