"""SIGKILL `memory compress` at random moments, many times; the store must stay consistent.

Each run is a real `python -m memtool compress` process. Half of the kills land at a uniformly
random moment of a typical run (measured); the other half land during the write phase: the test
waits until the process starts writing this entry's transcript, then kills it 0-WRITE_SPREAD_S
later, while transcript, embedding, day file and index.json are being written. After every kill
`memory doctor` (in-process, under the store's lock) may find only crash residue (temp files,
orphan transcript/embedding files, a stale index.json), never an entry without its files, a torn
or duplicated entry. At the end `memory doctor --fix` (a real process) repairs the residue and
every compress that completed is present exactly once.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

from memtool.app import open_memory
from memtool.doctor import Doctor
from memtool.models import make_id
from memtool.providers.wordllama import WordLlamaEmbedder
from memtool.scaffold import init
from tests.conftest import embedding_path, transcript_path

pytestmark = pytest.mark.kills  # `pytest -m kills`, a step of .ci/run

# At least this many SIGKILLs (.ci/run asks for 200).
KILLS = int(os.environ.get("MEMTOOL_CRASH_KILLS", "40"))
WORKERS = 2  # concurrent kill loops (the lock is contended too)
# The loop ends on a count, never a clock: a loaded machine runs each compress slower, not fewer of
# them. Most runs are killed (a kill that lands after the run ended is a no-op): KILLS is reached
# well within MAX_RUNS whatever the machine's speed (40 kills: 54 s wall, 27 s CPU at load 6 on 2 cores).
MAX_RUNS = 5 * KILLS
WRITE_SPREAD_S = 0.03  # write-phase kills land this long at most after the first byte is written
POLL_S = 0.002
RESIDUE = {"temp", "orphan", "index"}  # what a crash may leave; doctor --fix repairs all of it
WORDS = "postgres billing auth0 migration webhook retries cache index deploy rollback alice bob carol dana schema latency".split()


def transcript(folder: Path, n: int, rng: random.Random) -> Path:
    lines = [f"{'User' if i % 2 == 0 else 'Assistant'}: session {n} step {i}: " + " ".join(rng.choices(WORDS, k=12)) + "." for i in range(20)]
    lines.append(f"User: we decided to use {rng.choice(WORDS)} for run {n}.")
    path = folder / f"t{n:04d}.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def compress_cmd(path: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "memtool", "compress", str(path), *extra]


def printed_ids(stdout: str) -> list[str]:
    return [line.split()[0] for line in stdout.splitlines() if line.startswith("ctx-")]


def test_sigkill_during_compress_never_corrupts_and_loses_nothing_completed(root, env, tmp_path):
    init(root)
    inbox = tmp_path / "in"
    inbox.mkdir()
    rng = random.Random(20260207)
    counter = iter(range(10**6))
    completed: list[str] = []
    times: list[float] = []
    lock = threading.Lock()

    def expected_id(path: Path) -> str:
        """The id `memory compress` gives this file: its mtime and text (as in cli/write.py)."""
        return make_id(datetime.fromtimestamp(path.stat().st_mtime).astimezone(), path.read_text())

    def writing(entry_id: str) -> bool:
        folder = transcript_path(root, entry_id).parent
        return folder.is_dir() and any(n.startswith((f".{entry_id}.md.", f"{entry_id}.md")) for n in os.listdir(folder))

    def run_once(mode: str, delay: float = 0.0) -> tuple[int, str]:
        """mode: 'complete' (no kill), 'random' (kill after `delay`), 'write' (kill during the write phase)."""
        with lock:
            path = transcript(inbox, next(counter), rng)
        entry_id = expected_id(path)
        t0 = time.monotonic()
        proc = subprocess.Popen(compress_cmd(path), cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if mode == "random":
            try:
                proc.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                proc.kill()  # SIGKILL
        elif mode == "write":
            while proc.poll() is None and not writing(entry_id):
                time.sleep(POLL_S)
            time.sleep(delay)
            proc.kill()  # no-op if it already exited
        out, err = proc.communicate()
        assert proc.returncode in (0, -9), err
        ids = printed_ids(out)
        with lock:
            completed.extend(ids)  # printed its id: it completed, even if killed just after
            if proc.returncode == 0:
                assert ids == [entry_id]  # the write-phase trigger watches the right file
                times.append(time.monotonic() - t0)
        return proc.returncode, entry_id

    def stage(entry_id: str) -> str:
        """How far a killed compress got (the store's lock is held by the caller)."""
        lay = doctor.layout
        if any(e.id == entry_id for _, e in doctor.read_days()[0]):
            listed = entry_id in lay.index_file.read_text()
            return "stored, exit not reached" if listed else "stored, index.json stale"
        if lay.embedding_file(entry_id).is_file():
            return "transcript+embedding, no entry"
        if lay.transcript_file(entry_id).is_file():
            return "transcript only"
        return "nothing written yet"

    run_once("complete")  # warm-up: exports the embedding matrix to the shared cache
    calib = [threading.Thread(target=run_once, args=("complete",)) for _ in range(2 * WORKERS)]
    for t in calib:
        t.start()
    for t in calib:
        t.join()

    doctor = Doctor(open_memory(root).layout, open_memory(root).settings, WordLlamaEmbedder())
    kills = {"random": 0, "write": 0}
    stages: dict[str, int] = {}  # how far each killed compress got
    failures: list[str] = []
    runs = [0]
    started = time.monotonic()

    def worker() -> None:
        while True:
            with lock:
                if sum(kills.values()) >= KILLS or runs[0] >= MAX_RUNS:
                    return
                runs[0] += 1
                mode = "write" if kills["write"] <= kills["random"] else "random"
                delay = rng.uniform(0.0, WRITE_SPREAD_S) if mode == "write" else rng.uniform(0.0, statistics.median(times))
            rc, entry_id = run_once(mode, delay)
            with doctor.store.lock():
                where = stage(entry_id)
            report = doctor.diagnose()  # under the store's lock: no writer is half-way through
            bad: list = [p for p in report.problems if p.kind not in RESIDUE]
            visible, _ = doctor.read_days()
            bad += [f"entry {e.id} is visible without its transcript" for _, e in visible if not doctor.layout.transcript_file(e.id).is_file()]
            with lock:
                kills[mode] += rc == -9
                if rc == -9:
                    stages[where] = stages.get(where, 0) + 1
                if bad:
                    failures.append(f"after a {mode} kill: " + "; ".join(p if isinstance(p, str) else f"{p.kind} {p.where()}: {p.message}" for p in bad))

    threads = [threading.Thread(target=worker) for _ in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started

    summary = (
        f"{sum(kills.values())} SIGKILLs ({kills['random']} at random moments, {kills['write']} during the write phase) in "
        f"{runs[0]} runs, {elapsed:.0f}s with {WORKERS} concurrent loops; {len(completed)} compresses completed; median run "
        f"{statistics.median(times):.2f}s; killed at: " + ", ".join(f"{k} {v}" for k, v in sorted(stages.items()))
    )
    print(summary)
    assert not failures, failures[:5]
    assert sum(kills.values()) >= KILLS, summary

    # the real command finds only residue, repairs it, and then the store is healthy
    check = subprocess.run([sys.executable, "-m", "memtool", "doctor", "--json"], cwd=root, env=env, capture_output=True, text=True)
    assert {p["kind"] for p in json.loads(check.stdout)["problems"] if p["severity"] == "error"} <= RESIDUE
    fix = subprocess.run([sys.executable, "-m", "memtool", "doctor", "--fix"], cwd=root, env=env, capture_output=True, text=True)
    assert fix.returncode == 0, fix.stdout + fix.stderr
    final = subprocess.run([sys.executable, "-m", "memtool", "doctor"], cwd=root, env=env, capture_output=True, text=True)
    assert final.returncode == 0 and "healthy" in final.stdout, final.stdout

    # every completed compress is present exactly once, with its files; nothing is duplicated
    stored = [e["id"] for p in sorted((root / "memory/index").glob("????-??-??.json")) for e in json.loads(p.read_text())["entries"]]
    indexed = [e["id"] for e in json.loads((root / "memory/index/index.json").read_text())["entries"]]
    assert len(stored) == len(set(stored)) and sorted(stored) == sorted(indexed)
    assert set(completed) <= set(stored) and len(completed) == len(set(completed))
    for entry_id in completed:
        assert embedding_path(root, entry_id).is_file()
        assert transcript_path(root, entry_id).is_file()
