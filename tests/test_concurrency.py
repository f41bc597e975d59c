"""Many processes write into one memory root at the same moment: nothing is lost, nothing is torn.

COMPRESSORS processes x COMPRESSES entries each (every compress a separate write under the lock),
LOGGERS processes x LOGS two-line notes each, plus real `memory compress` / `memory log` commands,
all released at once by a barrier file.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time

from memtool.doctor import open_doctor
from memtool.scaffold import init
from memtool.store import Layout
from memtool.sync import persist_embedder
from tests.conftest import embedding_path, transcript_path

COMPRESSORS, COMPRESSES = 4, 10
LOGGERS, LOGS = 4, 20
CLI_EACH = 2  # extra `memory compress` and `memory log` commands
READY_TIMEOUT_S = 60.0

WORKER = textwrap.dedent(
    """
    import json, sys, time
    from datetime import datetime, timedelta, timezone
    from pathlib import Path
    from memtool.app import open_memory

    kind, n, count, barrier = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    mem = open_memory()
    mem.embedder.embed_documents(["warm up"])  # load the model before the start signal
    (barrier / f"ready-{kind}-{n}").touch()
    while not (barrier / "go").exists():
        time.sleep(0.005)
    ids = []
    base = datetime(2026, 3, 1, 9, n, tzinfo=timezone.utc)  # one day file for all: its read-modify-write is contended
    for j in range(count):
        if kind == "compress":
            text = f"Writer {n} session {j}: we decided to move the billing report for customer {n * 100 + j} to Postgres. Dana reviews it."
            ids.append(mem.compress(text, when=base + timedelta(seconds=j), session=f"w{n}").id)
        else:
            mem.log(f"note w{n}-l{j} from writer {n}\\nsecond line of w{n}-l{j}", agent=f"agent{n}", session=f"s{n}")
    print(json.dumps(ids))
    """
)


def test_concurrent_writers_lose_nothing(root, env, tmp_path):
    init(root)
    persist_embedder(Layout(root), env["MEMTOOL_EMBEDDER"])  # the store's embedder: the one the writers use, for the doctor too
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    procs = [("compress", n, COMPRESSES) for n in range(COMPRESSORS)] + [("log", n, LOGS) for n in range(LOGGERS)]
    running = [
        subprocess.Popen(
            [sys.executable, str(script), kind, str(n), str(count), str(barrier)], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for kind, n, count in procs
    ]
    deadline = time.monotonic() + READY_TIMEOUT_S
    while len(list(barrier.glob("ready-*"))) < len(procs):
        assert time.monotonic() < deadline and all(p.poll() is None for p in running), [p.communicate() for p in running if p.poll() is not None]
        time.sleep(0.01)
    # the real commands start with the workers (they need ~0.5 s to start, the workers run longer)
    cli_in = [tmp_path / f"cli{i}.md" for i in range(CLI_EACH)]
    for i, path in enumerate(cli_in):
        path.write_text(f"User: command line session {i}: we agreed the invoices export runs nightly at {i + 1} am.\n")
    (barrier / "go").touch()
    t0 = time.monotonic()
    cli = [
        subprocess.Popen([sys.executable, "-m", "memtool", "compress", str(p)], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for p in cli_in
    ]
    cli += [
        subprocess.Popen(
            [sys.executable, "-m", "memtool", "log", f"cli note c{i}", "--agent", "cli"],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(CLI_EACH)
    ]
    ids: list[str] = []
    for p in running:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        ids += json.loads(out)
    for p in cli:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        ids += [line.split()[0] for line in out.splitlines() if line.startswith("ctx-")]
    elapsed = time.monotonic() - t0
    print(f"{COMPRESSORS}x{COMPRESSES} compress + {LOGGERS}x{LOGS} log + {CLI_EACH}+{CLI_EACH} CLI processes at once: {elapsed:.1f}s")

    # every entry: exactly once in the day files, listed by index.json, with its files
    assert len(ids) == len(set(ids)) == COMPRESSORS * COMPRESSES + CLI_EACH
    stored = [e["id"] for p in sorted((root / "memory/index").glob("????-??-??.json")) for e in json.loads(p.read_text())["entries"]]
    assert sorted(stored) == sorted(ids)
    index = json.loads((root / "memory/index/index.json").read_text())
    assert sorted(e["id"] for e in index["entries"]) == sorted(ids)
    for entry_id in ids:
        assert embedding_path(root, entry_id).is_file() and transcript_path(root, entry_id).is_file()

    # every log line exactly once, whole, with its provenance; no torn or interleaved lines
    logs = [p for p in (root / "memory").glob("????-??-??.md")]
    lines = [ln for p in logs for ln in p.read_text().splitlines()]
    assert all(re.match(r"^(# \d{4}-\d{2}-\d{2}|- \d\d:\d\d .+|  .+)$", ln) for ln in lines), lines
    assert sum(ln.startswith("# ") for ln in lines) == len(logs)  # one header per file
    for n in range(LOGGERS):
        for j in range(LOGS):
            [i] = [k for k, ln in enumerate(lines) if re.match(rf"^- \d\d:\d\d note w{n}-l{j} from writer {n}$", ln)]
            assert lines[i + 1] == f"  second line of w{n}-l{j} <!-- source=user_explicit agent=agent{n} session=s{n} -->"
    for i in range(CLI_EACH):
        assert sum(ln.endswith(f"cli note c{i} <!-- source=user_explicit agent=cli -->") for ln in lines) == 1

    report = open_doctor(root).diagnose()
    assert report.healthy and report.problems == [], report.problems
