"""Bad input gets a clear error and a non-zero exit, and nothing already stored changes.

Each case hashes the whole memory/ tree (minus .cache/ and .lock) before and after. A read-only
root and a full disk are simulated in-process (the tests run as root, so chmod stops nothing):
os.open / os.write / os.fsync raise EROFS or ENOSPC for files under memory/, as the kernel would.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memtool.cli.main import app
from memtool.errors import BadInput, ConfigError, NotAMemoryRoot, StorageError, StoreCorrupt
from tests.conftest import transcript_path

AUTH = "Alice: We decided to use Auth0 instead of custom JWT handling. Sarah owns the migration before March 15."
BIG_MB = 50


@pytest.fixture
def store(root, monkeypatch, tmp_path_factory):
    """A memory root with one entry and one log line, the model cache shared by the session."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-cache"))
    monkeypatch.setenv("MEMTOOL_EMBEDDER", "wordllama")
    assert cli("init").exit_code == 0
    (root / "first.md").write_text(AUTH + "\n")
    assert cli("compress", "first.md").exit_code == 0
    assert cli("log", "set up the project").exit_code == 0
    return root


def cli(*args: str, input: str | bytes | None = None):
    return CliRunner().invoke(app, list(args), input=input)


def tree(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted((root / "memory").rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and "/.cache/" not in f"/{rel}/" and p.name != ".lock":
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def refused(store: Path, res, code: int, *needles: str) -> None:
    assert res.exit_code == code, res.output
    for needle in needles:
        assert needle in res.output, res.output
    assert "Traceback" not in res.output


@pytest.mark.parametrize("content, needle", [(b"", "empty"), (b"  \n\t\n   \n", "empty"), (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "binary")])
def test_empty_whitespace_and_binary_transcripts(store, content, needle):
    (store / "t.md").write_bytes(content)
    before = tree(store)
    refused(store, cli("compress", "t.md"), BadInput.exit_code, "t.md", needle)
    refused(store, cli("compress", "-", input=content), BadInput.exit_code, "<stdin>", needle)
    assert tree(store) == before


def test_empty_log_note(store):
    before = tree(store)
    refused(store, cli("log", "   "), BadInput.exit_code, "nothing to log")
    refused(store, cli("log", "x", "--source", "the-internet"), BadInput.exit_code, "source must be one of")
    assert tree(store) == before


def test_invalid_utf8_is_replaced_with_a_warning(store):
    (store / "t.md").write_bytes(b"Bob: the caf\xe9 menu goes to Postgres.\n")
    res = cli("compress", "t.md")
    assert res.exit_code == 0 and "warning: t.md: invalid UTF-8 at byte 12; undecodable bytes replaced with U+FFFD" in res.output
    entry_id = res.stdout.split()[0]
    assert "caf\ufffd menu" in transcript_path(store, entry_id).read_text()
    res = cli("log", "-", input=b"caf\xe9 note\n")
    assert res.exit_code == 0 and "invalid UTF-8" in res.output


def test_50_mb_transcript_is_refused_before_it_is_read(store):
    big = store / "big.md"
    with open(big, "w") as fh:
        line = "User: a very long session about billing, invoices and the Postgres migration.\n"
        fh.write(line * (BIG_MB * 2**20 // len(line) + 1))
    before = tree(store)
    tracemalloc.start()
    res = cli("compress", "big.md")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    refused(store, res, BadInput.exit_code, "big.md", "is over the limit of 20,971,520 bytes", "max_transcript_bytes")
    assert peak < 8 * 2**20, f"{peak / 2**20:.0f} MiB allocated: the file was read"
    assert tree(store) == before


def test_50_mb_transcript_refused_by_the_real_command(store, tmp_path):
    big = tmp_path / "big.txt"
    big.write_bytes(b"word " * (BIG_MB * 2**20 // 5))
    before = tree(store)
    for args, stdin in ((["compress", str(big)], None), (["compress", "-"], big)):
        with open(stdin or os.devnull, "rb") as fh:
            res = subprocess.run([sys.executable, "-m", "memtool", *args], stdin=fh, capture_output=True, text=True, cwd=store)
        assert res.returncode == BadInput.exit_code and "max_transcript_bytes" in res.stderr and "Traceback" not in res.stderr
    assert tree(store) == before


def test_unknown_options(store):
    before = tree(store)
    for args in (["compress", "first.md", "--bogus"], ["log", "x", "--agnet", "claude"], ["search", "x", "--limit", "many"], ["doctor", "--fixx"]):
        res = cli(*args)
        assert res.exit_code == 2 and ("No such option" in res.output or "Invalid value" in res.output), res.output
    res = subprocess.run([sys.executable, "-m", "memtool", "compress", "first.md", "--bogus"], capture_output=True, text=True, cwd=store)
    assert res.returncode == 2 and "No such option: --bogus" in res.stderr
    assert tree(store) == before


def test_not_a_memory_root(store, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "t.md").write_text(AUTH)
    res = subprocess.run([sys.executable, "-m", "memtool", "--root", str(elsewhere), "compress", "t.md"], capture_output=True, text=True, cwd=elsewhere)
    assert res.returncode == NotAMemoryRoot.exit_code and "is not a memory root" in res.stderr and "memory init" in res.stderr
    for args in (["compress", "t.md"], ["log", "x"], ["search", "x"], ["doctor"]):  # the same in process
        res = cli("--root", str(elsewhere), *args)
        assert res.exit_code == NotAMemoryRoot.exit_code and "is not a memory root" in res.stderr and "memory init" in res.stderr
    assert sorted(p.name for p in elsewhere.iterdir()) == ["t.md"]  # nothing was created there


@pytest.mark.parametrize("folder", ["memory/index", "memory/transcripts"])
def test_a_store_folder_that_is_a_file_is_named_not_a_traceback(store, folder):
    import shutil

    shutil.rmtree(store / folder)
    (store / folder).write_text("not a folder")
    (store / "t.md").write_text("Bob: the invoices query was slow; we added an index.")
    before = tree(store)
    for args in (["compress", "t.md"], ["search", "Auth0"], ["context", "Auth0"], ["stats"], ["reindex"]):
        refused(store, cli(*args), 4, f"{folder} is a file, not a folder")
    assert tree(store) == before


def _under_memory(store: Path, path) -> bool:
    text = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else ""
    return text.startswith(str(store / "memory")) and "/.cache" not in text


def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


@pytest.fixture
def read_only(store, monkeypatch):
    """memory/ behaves like a read-only mount: opening anything there for writing fails with EROFS."""
    real_open = os.open
    writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def fake_open(path, flags, *args, **kw):
        if flags & writing and _under_memory(store, path):
            raise OSError(errno.EROFS, "Read-only file system", os.fsdecode(path))
        return real_open(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", fake_open)
    return store


def test_read_only_root(read_only):
    store = read_only
    (store / "t.md").write_text("Carol: we moved the nightly export to 2 am.\n")
    before = tree(store)
    refused(store, cli("compress", "t.md"), StorageError.exit_code, "read-only", "Nothing already stored was changed")
    refused(store, cli("log", "a note"), StorageError.exit_code, "read-only")
    assert tree(store) == before
    res = cli("search", "Auth0")  # reading still works
    assert res.exit_code == 0 and "Auth0" in res.output


def full_disk(store: Path, monkeypatch, ok_writes: int = 0) -> None:
    """The disk fills up: after `ok_writes` files are flushed, fsync/write of files under memory/ fail with ENOSPC."""
    real_fsync, real_write = os.fsync, os.write
    flushed = [0]

    def is_store_file(fd: int) -> bool:
        return stat.S_ISREG(os.fstat(fd).st_mode) and _under_memory(store, _fd_path(fd)) and not _fd_path(fd).endswith(".lock")

    def fake_fsync(fd):
        if is_store_file(fd):
            flushed[0] += 1
            if flushed[0] > ok_writes:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    def fake_write(fd, data):
        if is_store_file(fd) and flushed[0] >= ok_writes:
            if len(data) > 8:
                return real_write(fd, bytes(data[: len(data) // 2]))  # the kernel takes what fits...
            raise OSError(errno.ENOSPC, "No space left on device")  # ...then refuses the rest
        return real_write(fd, data)

    monkeypatch.setattr(os, "fsync", fake_fsync)
    monkeypatch.setattr(os, "write", fake_write)


@pytest.mark.parametrize("ok_writes", [0, 1, 2], ids=["at-transcript", "at-embedding", "at-day-file"])
def test_full_disk_during_compress(store, monkeypatch, ok_writes):
    (store / "t.md").write_text("Dana: we set up Stripe webhooks for invoices and added retries.\n")
    before = tree(store)
    with monkeypatch.context() as mp:
        full_disk(store, mp, ok_writes)
        refused(store, cli("compress", "t.md"), StorageError.exit_code, "the disk is full", "Nothing already stored was changed")
    assert tree(store) == before  # files written before the failure were taken back


def test_full_disk_during_log_never_leaves_half_a_line(store, monkeypatch):
    log = next((store / "memory").glob("????-??-??.md"))
    before = tree(store)
    with monkeypatch.context() as mp:
        full_disk(store, mp)
        refused(store, cli("log", "a note that does not fit on the disk"), StorageError.exit_code, "the disk is full")
    assert tree(store) == before
    assert cli("log", "the next note").exit_code == 0
    assert log.read_text().splitlines()[-1].endswith("the next note")


def test_malformed_config(store):
    cfg = store / "memory/config.yaml"
    cfg.write_text("budget: 500\ncompressor: [local\nembedder: wordllama\n")
    (store / "t.md").write_text(AUTH)
    before = tree(store)
    for args in (["compress", "t.md"], ["log", "x"], ["search", "x"]):
        refused(store, cli(*args), ConfigError.exit_code, str(cfg), "line 3", "not valid YAML")
    cfg.write_text("budjet: 500\n")
    refused(store, cli("search", "x"), ConfigError.exit_code, "unknown setting 'budjet'")
    cfg.write_text("budget: lots\n")
    refused(store, cli("search", "x"), ConfigError.exit_code, "line 1: setting 'budget' must be a whole number, got 'lots'")
    del before["memory/config.yaml"]
    after = tree(store)
    del after["memory/config.yaml"]
    assert after == before


def test_index_json_hand_edited_into_invalid_json(store):
    index = store / "memory/index/index.json"
    index.write_text(index.read_text().replace('"entries": [', '"entries": [,', 1))
    res = cli("search", "Auth0 migration", "--json")
    assert res.exit_code == 0 and "Auth0" in json.loads(res.stdout)[0]["text"]  # day files are the truth
    res = cli("doctor")
    refused(store, res, StoreCorrupt.exit_code, "memory/index/index.json:", "invalid JSON")
    assert cli("doctor", "--fix").exit_code == 0
    assert cli("doctor").exit_code == 0
    assert len(json.loads(index.read_text())["entries"]) == 1


# --- JSON transcripts: stdin, bad bytes, unknown formats, nesting, sizes -----------------------------

FIXTURES = Path(__file__).parent / "fixtures" / "hooks"


def test_non_utf8_json_transcript_is_converted_with_the_warning(store):
    (store / "t.jsonl").write_bytes(b'{"role": "user", "content": "the caf\xe9 menu goes to Postgres"}\n')
    res = cli("compress", "t.jsonl")
    assert res.exit_code == 0 and "warning: t.jsonl: invalid UTF-8 at byte 36; undecodable bytes replaced with U+FFFD" in res.stderr
    entry_id = res.stdout.split()[0]
    assert transcript_path(store, entry_id).read_text() == "user: the caf\ufffd menu goes to Postgres\n"


@pytest.mark.parametrize("content", ['["a", "b"]', '{"messages": "x"}', '{"a": 1}\n{"b": 2}\n'])
def test_json_file_of_no_known_format_is_refused_naming_the_formats(store, content):
    (store / "t.json").write_text(content)
    before = tree(store)
    refused(
        store,
        cli("compress", "t.json"),
        BadInput.exit_code,
        "t.json: JSON, but of no known transcript format",
        "Claude Code JSONL, Codex CLI JSONL, Gemini CLI JSON",
        "convert it to Markdown",
    )
    assert "empty" not in cli("compress", "t.json").stderr
    assert tree(store) == before


def test_a_folder_import_skips_json_of_no_known_format(store):
    folder = store / "backlog"
    folder.mkdir()
    (folder / "package.json").write_text('{"name": "app", "version": "1.0.0"}')
    (folder / "session.jsonl").write_bytes((FIXTURES / "claude_transcript.jsonl").read_bytes())
    res = cli("compress", str(folder))
    assert res.exit_code == BadInput.exit_code and "skipped: " in res.stderr and "package.json: JSON, but of no known transcript format" in res.stderr
    assert "1 of 2 inputs were skipped" in res.stderr
    [stored] = [line for line in res.stdout.splitlines() if line.startswith("ctx-")]
    assert "Login form crash fixed" in stored


@pytest.mark.parametrize("how", ["file", "stdin"])
def test_deeply_nested_json_is_refused_without_a_traceback(store, how):
    (store / "deep.json").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    before = tree(store)
    if how == "file":
        refused(store, cli("compress", "deep.json"), BadInput.exit_code, "deep.json: the JSON is nested too deeply to read")
        assert tree(store) == before
    else:  # stdin is only converted when it is a transcript format memtool knows; this is text
        res = cli("compress", "-", "--json", input=(store / "deep.json").read_bytes())
        assert res.exit_code == 0 and "Traceback" not in res.output
        [entry] = json.loads(res.stdout)
        assert transcript_path(store, entry["id"]).read_text().startswith("[[[[")


def test_oversized_stdin_reports_what_it_knows_of_the_size(store):
    (store / "memory/config.yaml").write_text("max_transcript_bytes: 100\n")
    before = tree(store)
    res = cli("compress", "-", input=b"x" * 5000)
    refused(store, res, BadInput.exit_code, "<stdin>: more than the limit of 100 bytes (setting max_transcript_bytes)", "max_transcript_bytes")
    assert "101 bytes" not in res.stderr
    # JSON is measured after conversion (like a .json file), so it is read whole and its real size is known
    res = cli("compress", "-", input=b'["' + b"x" * 5000 + b'"]')
    refused(store, res, BadInput.exit_code, "<stdin>: 5,004 bytes is over the limit of 100 bytes (setting max_transcript_bytes)")
    del before["memory/config.yaml"]
    after = tree(store)
    del after["memory/config.yaml"]
    assert after == before


def test_json_on_stdin_under_the_limit_after_conversion_is_stored(store):
    """A Claude Code JSONL bigger than the limit whose conversation fits is stored, as the file would be."""
    raw = (FIXTURES / "claude_transcript.jsonl").read_bytes()
    (store / "memory/config.yaml").write_text(f"max_transcript_bytes: {len(raw) // 2}\n")
    res = cli("compress", "-", "--json", input=raw)
    assert res.exit_code == 0, res.output
    [entry] = json.loads(res.stdout)
    kept = transcript_path(store, entry["id"]).read_text()
    assert kept.startswith("session: /home/dev/shop\n\nsummary: Login form crash fixed\n\nuser: The login form crashes") and '"type"' not in kept


# --- init where a file stands in for a folder ---------------------------------------------------------


def _all_files(top: Path) -> dict[str, bytes]:
    return {p.relative_to(top).as_posix(): (p.read_bytes() if p.is_file() else b"<dir>") for p in sorted(top.rglob("*"))}


@pytest.mark.parametrize(
    "make, root_arg, needles",
    [
        (lambda t: (t / "f").write_text("mine\n"), "f", ["/f is a file, not a folder: a memory root must be a folder", "--root"]),
        (lambda t: (t / "f").write_text("mine\n"), "f/sub", ["cannot create the memory root", "/f is a file, not a folder", "--root"]),
        (
            lambda t: ((t / "R").mkdir(), (t / "R/memory").write_text("mine\n")),
            "R",
            ["cannot create memory/ in", "/R/memory is a file, not a folder", "Move or rename it, then run `memory init` again"],
        ),
        (
            lambda t: ((t / "R/memory").mkdir(parents=True), (t / "R/memory/index").write_text("mine\n")),
            "R",
            ["cannot create memory/index/ in", "/R/memory/index is a file, not a folder"],
        ),
        (
            lambda t: ((t / "R/memory/index").mkdir(parents=True), (t / "R/memory/index/embeddings").write_text("mine\n")),
            "R",
            ["cannot create memory/index/embeddings/ in", "/R/memory/index/embeddings is a file, not a folder"],
        ),
    ],
    ids=["root-is-a-file", "root-under-a-file", "memory-is-a-file", "index-is-a-file", "embeddings-is-a-file"],
)
def test_init_where_a_file_is_in_the_way(tmp_path, make, root_arg, needles):
    top = tmp_path / "top"
    top.mkdir()
    make(top)
    before = _all_files(top)
    res = subprocess.run([sys.executable, "-m", "memtool", "--root", str(top / root_arg), "init"], capture_output=True, text=True, cwd=top)
    assert res.returncode == BadInput.exit_code, res.stderr
    assert res.stderr.startswith("error: ") and "Traceback" not in res.stderr
    for needle in needles:
        assert needle in res.stderr, res.stderr
    assert _all_files(top) == before  # nothing created, nothing changed
