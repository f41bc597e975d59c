"""Kill `memory forget`, `archive`, `restore`, `reembed` and `doctor --fix` at a mutating system call,
run the command again and then `memory doctor --fix`: nothing that should exist is lost, nothing
forgotten comes back.

Each command runs once under `strace -e trace=<mutating calls>` to list its mutating calls (rename,
unlink, mkdir, fsync, ...); each kill run is then the real `python -m memtool` process under
`strace -e inject=<call>:signal=KILL:when=N`, SIGKILLed at the N-th call of that kind. FAULT_POINTS
kill points per command are tried, spread over the run with both ends included
(MEMTOOL_FAULT_POINTS=all tries every one). After the rerun and the repair, every entry that should
exist is stored exactly once (live or archived) with its transcript and embedding beside it, the
forgotten entries' text is in no file under memory/ (the caches included) and the doctor reports the
store healthy. Needs strace and ptrace; skipped with the reason otherwise.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

import pytest

from memtool.app import open_memory
from memtool.archive import archive
from memtool.dayfile import read_day
from memtool.providers.wordllama import WordLlamaEmbedder
from memtool.scaffold import init
from memtool.store import Layout, archive_layouts, vector_bytes
from memtool.sync import sync
from tests.conftest import read_vector_at

pytestmark = pytest.mark.kills  # `pytest -m kills`, a step of .ci/run

MUTATING = ("rename", "renameat", "renameat2", "unlink", "unlinkat", "rmdir", "mkdir", "mkdirat", "fsync", "fdatasync", "ftruncate", "link", "linkat")
FAULT_POINTS = os.environ.get("MEMTOOL_FAULT_POINTS", "3")  # kill points tried per command (about 2 s each), or "all"
RUN_TIMEOUT_S = 60
CALL_RE = re.compile(r"^\d+\s+(\w+)\(")  # `strace -f -o` line: "<pid> <call>(...": a resumed call is not counted again
NOW = datetime.now(timezone.utc)
SESSIONS = [  # (days ago, unique word, text): two archived already, two old enough for `memory archive`, two recent
    (900, "Quillfeather", "Alice moved the billing tables to Postgres; the Quillfeather migration ran overnight."),
    (880, "Marrowgate", "Bob rotated the Marrowgate webhook secret and added retries to the Stripe handler."),
    (420, "Thistlewick", "Carol tuned the Thistlewick cache eviction; Redis memory dropped by a third."),
    (400, "Brambleton", "Dana wrote the Brambleton rollback runbook for the Kafka consumers."),
    (3, "Copperfen", "Erin shipped dark mode in the Copperfen dashboard after the contrast review."),
    (1, "Wrenhollow", "Frank added the Wrenhollow index CONCURRENTLY on the orders table."),
]
FORGET = ("Marrowgate", "Brambleton", "Copperfen")  # one archived, one due for the archive, one recent


def strace_problem() -> str | None:
    """Why the strace test cannot run here, or None."""
    if shutil.which("strace") is None:
        return "strace is not installed (apt-get install -y strace; .ci/run does)"
    probe = subprocess.run(["strace", "-qq", "-o", "/dev/null", "-e", "trace=none", "true"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        return f"strace cannot trace here (ptrace not permitted?): {probe.stderr.strip()[:200]}"
    return None


@dataclass
class Scenario:
    name: str
    argv: Callable[[Path, dict[str, str]], list[str]]  # (base root, ids by word) -> the command's arguments
    prepare: Callable[[Path, Path], None]  # (work root, base root): make the store the command starts from
    forgotten: tuple[str, ...] = ()
    check: Callable[[Path], None] = lambda root: None


def copy_store(root: Path, base: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(base, root, symlinks=True)


def old_model(root: Path, base: Path) -> None:
    """Every embedding file made by another model (each replaced by a rename, as git or another memtool
    writes it): `memory reembed` rewrites them all."""
    copy_store(root, base)
    for f in (root / "memory").rglob("embeddings/*/*.vec"):
        data = read_vector_at(f)
        tmp = f.with_name(f".{f.name}.new")
        tmp.write_bytes(vector_bytes(data["id"], "old-model", data["content_hash"], data["embedding"]))
        os.replace(tmp, f)


def damaged(root: Path, base: Path) -> None:
    """What an interrupted archive and a crash leave: an archived entry also live without its files (its
    only transcript and vector archived), a live day file cut off mid-entry, a temp file, an orphan."""
    copy_store(root, base)
    layout = Layout(root)
    arch = archive_layouts(layout)[0]
    day = arch.day_files()[0]
    doc = json.loads(day.read_text())
    (layout.index_dir / day.name).write_text(json.dumps({"date": doc["date"], "entries": doc["entries"][:1]}, indent=2))
    recent = max(layout.day_files())
    text = recent.read_text()
    recent.write_text(text[: len(text) * 2 // 3])  # index.json still holds its entries
    (layout.index_dir / ".2026-01-01.json.tmp").write_text("{")
    orphan = layout.transcript_file("ctx-20200101-00000000")
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_text("User: an orphan\n")


def no_reembed_left(root: Path) -> None:
    models = {read_vector_at(f)["model"] for f in (root / "memory").rglob("embeddings/*/*.vec")}
    assert models == {WordLlamaEmbedder().model}, models


SCENARIOS = {
    "forget": Scenario("forget", lambda base, ids: ["forget", *(ids[w] for w in FORGET), "--yes"], copy_store, FORGET),
    "archive": Scenario(
        "archive",
        lambda base, ids: ["archive"],
        copy_store,
        check=lambda root: not any(read_day(p) for p in Layout(root).day_files() if p.stem < f"{NOW - timedelta(days=365):%Y-%m-%d}"),
    ),
    "restore": Scenario(
        "restore", lambda base, ids: ["restore", str(base.parent / "backup.tar.gz")], lambda root, base: shutil.rmtree(root, ignore_errors=True) or root.mkdir()
    ),
    "reembed": Scenario("reembed", lambda base, ids: ["reembed"], old_model, check=no_reembed_left),
    "doctor": Scenario("doctor", lambda base, ids: ["doctor", "--fix"], damaged),
}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The store every scenario starts from (WordLlama vectors, as the subprocesses embed), its ids by
    word, a backup of it for `memory restore`, and the environment of the `memory` processes."""
    top = tmp_path_factory.mktemp("faults")
    cache = tmp_path_factory.getbasetemp() / "xdg-cache"  # the model cache tests/conftest.py's `env` shares
    root = top / "base"
    (top / "home").mkdir()
    root.mkdir()
    init(root)
    mem = open_memory(root, embedder=WordLlamaEmbedder(cache / "memtool" / "models"))
    ids = {
        word: mem.compress(f"User: {text}\nAssistant: noted, {word} is done.\n", when=NOW - timedelta(days=ago), session=word.lower()).id
        for ago, word, text in SESSIONS
    }
    archive(mem.layout, mem.settings, now=NOW - timedelta(days=200))  # the two oldest only
    sync(mem)  # `memory reindex`: its manifest names every entry
    mem.search("Postgres migration")  # search caches holding every entry's text and vectors
    mem.search("Postgres migration", archive=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTOOL_") and k not in ("GEMINI_API_KEY", "GOOGLE_API_KEY")}
    env.update(
        HOME=str(top / "home"), MEMTOOL_EMBEDDER="wordllama", MEMTOOL_COMPRESSOR="local", XDG_CACHE_HOME=str(cache), PYTHONDONTWRITEBYTECODE="1"
    )  # no .pyc writes among the kill points
    made = run(["backup", str(top / "backup.tar.gz")], dict(env, MEMTOOL_ROOT=str(root)))
    assert made.returncode == 0, made.stderr
    return root, ids, env


def run(argv: list[str], env: dict[str, str], strace: list[str] | None = None) -> subprocess.CompletedProcess:
    cmd = [*(strace or []), sys.executable, "-m", "memtool", *argv]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


def kill_points(trace: Path) -> list[tuple[str, int]]:
    """(call, n): the n-th call of that kind, for each mutating call the traced run made, in order."""
    seen: dict[str, int] = {}
    points = []
    for line in trace.read_text().splitlines():
        m = CALL_RE.match(line)
        if m:
            seen[m.group(1)] = seen.get(m.group(1), 0) + 1
            points.append((m.group(1), seen[m.group(1)]))
    return points


def sample(points: list[tuple[str, int]], wanted: str) -> list[tuple[str, int]]:
    """`wanted` kill points (or "all"), spread over the run: chosen among the first and the last call of
    each run of the same call (a cache folder removed file by file counts as one step)."""
    if wanted == "all":
        return points
    steps = [p for i, p in enumerate(points) if i in (0, len(points) - 1) or points[i - 1][0] != p[0] or points[i + 1][0] != p[0]]
    n = int(wanted)
    if len(steps) <= n:
        return steps
    return [steps[round(i * (len(steps) - 1) / (n - 1))] for i in range(n)] if n > 1 else steps[:1]


def stored(root: Path) -> dict[str, list[Layout]]:
    """Entry id -> every folder (live, archive years) whose day files hold it."""
    out: dict[str, list[Layout]] = {}
    layout = Layout(root)
    for home in [layout, *archive_layouts(layout)]:
        for path in home.day_files():
            for e in read_day(path):
                out.setdefault(e.id, []).append(home)
    return out


def assert_nothing_lost(root: Path, ids: dict[str, str], forgotten: tuple[str, ...], where: str) -> None:
    found = stored(root)
    for word, entry_id in ids.items():
        if word in forgotten:
            assert entry_id not in found, f"{where}: forgotten {entry_id} is back"
            continue
        assert len(found.get(entry_id, [])) == 1, f"{where}: {entry_id} stored {len(found.get(entry_id, []))} times"
        home = found[entry_id][0]
        assert home.transcript_file(entry_id).is_file(), f"{where}: {entry_id} lost its transcript"
        assert home.embedding_file(entry_id).is_file(), f"{where}: {entry_id} lost its embedding"
    for path in (p for p in (root / "memory").rglob("*") if p.is_file()):
        data = path.read_bytes()
        for word in forgotten:
            tombstones = path.name == "tombstones.jsonl"  # forget's record of the ids, so a merge never brings them back
            assert word.encode() not in data and (tombstones or ids[word].encode() not in data), (
                f"{where}: {word} / {ids[word]} still in {path.relative_to(root)}"
            )


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_killed_at_a_mutating_call_then_rerun_loses_nothing(name, base, tmp_path):
    if (why := strace_problem()) is not None:
        pytest.skip(why)
    scenario = SCENARIOS[name]
    base_root, ids, env = base
    work = tmp_path / "work"
    env = dict(env, MEMTOOL_ROOT=str(work))
    argv = scenario.argv(base_root, ids)

    scenario.prepare(work, base_root)
    trace = tmp_path / "trace.txt"
    listed = run(argv, env, ["strace", "-f", "-qq", "-o", str(trace), "-e", "trace=" + ",".join(MUTATING)])
    assert listed.returncode == 0, listed.stderr
    points = kill_points(trace)
    assert points, "the command made no mutating call"
    t0, killed = time.perf_counter(), 0
    for call, n in sample(points, FAULT_POINTS):
        where = f"{name} killed at {call} #{n} of {len(points)} calls"
        scenario.prepare(work, base_root)
        cut = run(argv, env, ["strace", "-f", "-qq", "-o", "/dev/null", "-e", f"trace={call}", "-e", f"inject={call}:signal=KILL:when={n}"])
        killed += cut.returncode in (-9, 137)
        again = run(argv, env)
        assert again.returncode == 0, f"{where}: the rerun failed: {again.stderr[-800:]}"
        fixed = run(["doctor", "--fix", "--json"], env)
        assert fixed.returncode == 0 and json.loads(fixed.stdout)["healthy"], f"{where}: {fixed.stdout[-1500:]} {fixed.stderr[-500:]}"
        assert_nothing_lost(work, ids, scenario.forgotten, where)
        scenario.check(work)
    assert killed >= 1, f"no kill landed in {name}: {points[:10]}"
    assert FAULT_POINTS == "all" or time.perf_counter() - t0 < 20 * int(FAULT_POINTS), "kill loop too slow"
