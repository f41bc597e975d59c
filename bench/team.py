"""A team sharing one memory through git: N people, a week of sessions, a real bare repository.

    python bench/team.py                 # 10 people, 7 days, seed 1
    python bench/team.py --people 4 --days 3 --seed 2

Each person has a clone of one bare repository (git CLI, in a temp dir). Every simulated day all
of them pull, then each in turn (a random order) works: compresses one or two sessions, logs a line,
and sometimes promotes into MEMORY.md, archives, forgets an entry or corrects a summary; brings the
derived files up to date (`sync`, as `memory reindex` does), commits, pulls with merge or rebase at
random and pushes. Everyone's day is concurrent with everyone else's.

A conflict git leaves for a person to resolve is counted (per file, by kind) and resolved as a
careful person would: JSON entry files three-way by entry id (keeping theirs where both sides
edited one entry), Markdown keeping both sides' lines, a file deleted on one side and changed on
the other kept. At the end every clone pulls, syncs and is checked: the entries it holds (live and
archived) against what was stored and not forgotten (lost, resurrected), and the ids the same
searches return.

In-process core calls (open_memory with WordLlama and the local compressor), git through
subprocess. The merge driver, when the store has one (`memory git setup`), is run by git itself.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

WORDS = (
    "auth cache deploy schema migration queue retry timeout billing search index webhook token "
    "session cookie gateway metrics alert rollout flag import export backup restore vector ranking"
).split()
START = datetime(2026, 3, 2, tzinfo=timezone.utc)  # a Monday


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_EDITOR": "true", "GIT_AUTHOR_DATE": "", "GIT_COMMITTER_DATE": ""}
    env = {k: v for k, v in env.items() if v != ""}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=check)


@dataclass
class Tally:
    pushes: int = 0
    conflicted_pulls: int = 0
    conflicts: Counter = field(default_factory=Counter)  # kind of file -> hand-resolved conflicts
    real: int = 0  # conflicts of one entry edited two ways (expected: a person must choose)
    stored: set = field(default_factory=set)
    forgotten: set = field(default_factory=set)
    edited: Counter = field(default_factory=Counter)  # entry id -> how many summary edits


def kind_of(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    if name == "index.json":
        return "index.json"
    if "/embeddings/" in path:
        return "vector file"
    if "/transcripts/" in path:
        return "transcript"
    if name.endswith(".json") and "/index/" in path:
        return "day file (archive)" if "/archive/" in path else "day file"
    if name.endswith(".md") and path.startswith("memory/"):
        return "daily log"
    return name


class Person:
    def __init__(self, n: int, clone: Path, embedder, rng: random.Random, tally: Tally):
        self.n, self.clone, self.embedder, self.rng, self.tally = n, clone, embedder, rng, tally
        self.name = f"p{n:02d}"
        git(clone, "config", "user.name", self.name)
        git(clone, "config", "user.email", f"{self.name}@example.com")

    def memory(self):
        from memtool.app import open_memory

        return open_memory(self.clone, embedder=self.embedder, compressor="local", entry_retention_days=3, log_retention_days=3)

    # -- a session's work -----------------------------------------------------------------------------
    def work(self, day: int, seq: int) -> None:
        from memtool.archive import archive
        from memtool.forget import forget
        from memtool.promote import promote_text
        from memtool.sync import sync

        rng, mem = self.rng, self.memory()
        when = START + timedelta(days=day, hours=9 + self.n % 8, minutes=seq)
        for k in range(rng.choice((1, 1, 2))):
            topic = rng.sample(WORDS, 3)
            marker = f"m{self.name}d{day}s{k}"
            text = (
                f"Session {marker} by {self.name}. We worked on {topic[0]} and {topic[1]} for the {topic[2]} service. "
                f"Decided to keep the {topic[0]} {topic[1]} path; TODO check {topic[2]} later."
            )
            entry = mem.compress(text, when=when + timedelta(minutes=k), session=f"{self.name}-{day}-{k}", agent=self.name)
            self.tally.stored.add(entry.id)
        mem.log(f"{self.name} looked at {rng.choice(WORDS)} on day {day}", when=when.astimezone())
        if rng.random() < 0.2:
            promote_text(mem, f"{self.name}: prefer {rng.choice(WORDS)} over {rng.choice(WORDS)} (day {day})", section="Key decisions", today=when)
        live = sorted(e.id for e in mem.store.iter_entries())
        if day >= 4 and rng.random() < 0.1:
            archive(mem.layout, mem.settings, now=when)
        elif live and rng.random() < 0.15:
            gone = rng.choice(live)
            forget(mem.layout, [gone], mem.settings.compressor)
            self.tally.forgotten.add(gone)
        elif live and rng.random() < 0.15:
            target = mem.store.get(rng.choice(live))
            target.summary += f" Corrected by {self.name} on day {day}."
            with mem.store.lock():
                mem.store.update_entries([target])
            self.tally.edited[target.id] += 1
        sync(mem)
        git(self.clone, "add", "-A")
        git(self.clone, "commit", "-q", "-m", f"{self.name} day {day}", check=False)

    # -- git -------------------------------------------------------------------------------------------
    def pull(self) -> None:
        rebase = self.rng.random() < 0.5
        result = git(self.clone, "pull", "-q", "--rebase" if rebase else "--no-rebase", "origin", "main", check=False)
        hit = False
        while result.returncode != 0:
            conflicted = git(self.clone, "diff", "--name-only", "--diff-filter=U").stdout.split()
            if not conflicted:
                raise RuntimeError(f"{self.name}: pull failed without a conflict: {result.stderr}")
            hit = True
            for path in conflicted:
                self.resolve(path)
            if rebase:
                result = git(self.clone, "-c", "core.editor=true", "rebase", "--continue", check=False)
            else:
                result = git(self.clone, "commit", "-q", "--no-edit", check=False)
        self.tally.conflicted_pulls += hit
        from memtool.sync import sync

        sync(self.memory())  # index.json and embeddings in step with what the pull brought
        git(self.clone, "add", "-A")
        git(self.clone, "commit", "-q", "-m", f"{self.name} sync after pull", check=False)

    def resolve(self, path: str) -> None:
        """What a careful person does with one conflicted file (counted as a hand-resolved conflict)."""
        from memtool.gitmerge import merge_bytes

        self.tally.conflicts[kind_of(path)] += 1
        stages = {}
        for n in (1, 2, 3):
            shown = subprocess.run(["git", "show", f":{n}:{path}"], cwd=self.clone, capture_output=True)
            stages[n] = shown.stdout if shown.returncode == 0 else None
        base, ours, theirs = stages[1], stages[2], stages[3]
        if ours is None or theirs is None:  # deleted on one side, changed on the other: keep the changed one
            kept = ours if ours is not None else theirs
            (self.clone / path).write_bytes(kept)
            git(self.clone, "add", path)
            return
        merged = merge_bytes(path, base or b"", ours, theirs, prefer="theirs")
        self.tally.real += len(merged.conflicts)
        (self.clone / path).write_bytes(merged.data)
        git(self.clone, "add", path)

    def push(self) -> None:
        while True:
            self.pull()
            if git(self.clone, "push", "-q", "origin", "HEAD:main", check=False).returncode == 0:
                self.tally.pushes += 1
                return

    def state(self) -> tuple[set[str], list[list[str]]]:
        from memtool.store import Store, archive_layouts

        mem = self.memory()
        ids = {e.id for e in mem.store.iter_entries()}
        ids |= {e.id for a in archive_layouts(mem.layout) for e in Store(a).iter_entries()}
        results = [[h.id for h in mem.search(q, limit=5, archive=True).hits] for q in ("auth cache", "deploy rollout", "billing webhook", "vector ranking")]
        return ids, results


def fullest_folder(clone: Path) -> tuple[int, str]:
    """(files, folder) of the versioned folder holding the most files (memory/.cache and .git excluded)."""
    best = (0, "")
    for folder, dirs, files in os.walk(clone):
        dirs[:] = [d for d in dirs if d not in (".git", ".cache")]
        best = max(best, (len(files), os.path.relpath(folder, clone)))
    return best


def run(people: int, days: int, seed: int, setup: bool, workdir: Path) -> dict:
    from memtool.providers.wordllama import WordLlamaEmbedder
    from memtool.scaffold import init

    rng = random.Random(seed)
    embedder = WordLlamaEmbedder()
    origin = workdir / "origin.git"
    git(workdir, "init", "-q", "--bare", "-b", "main", str(origin))
    first = workdir / "p00"
    git(workdir, "clone", "-q", str(origin), str(first))
    git(first, "checkout", "-q", "-b", "main")
    init(first)  # writes .gitattributes and registers the merge driver (memtool/gitmerge.py)
    if not setup:  # the store as before: no merge rules, no driver
        (first / ".gitattributes").unlink()
        git(first, "config", "--remove-section", "merge.memtool")
    git(first, "add", "-A")
    git(first, "-c", "user.name=p00", "-c", "user.email=p00@example.com", "commit", "-q", "-m", "memory init")
    git(first, "push", "-q", "origin", "main")
    tally = Tally()
    team = []
    for n in range(people):
        clone = workdir / f"p{n:02d}"
        if n:
            git(workdir, "clone", "-q", str(origin), str(clone))
            if setup:
                from memtool.gitmerge import setup_git

                setup_git(clone)  # `memory git setup` in a fresh clone
        team.append(Person(n, clone, embedder, random.Random(rng.random()), tally))
    t0 = time.perf_counter()
    for day in range(days):
        for p in team:
            p.pull()
        order = team[:]
        rng.shuffle(order)
        for seq, p in enumerate(order):
            p.work(day, seq)
            p.push()
    for _ in range(2):  # everyone ends with everything
        for p in team:
            p.pull()
    states = [p.state() for p in team]
    fullest = max(fullest_folder(p.clone) for p in team)
    tracked_index = any(git(p.clone, "ls-files", "memory/index/index.json").stdout.strip() for p in team)
    expected = tally.stored - tally.forgotten
    lost = set.union(*(expected - ids for ids, _ in states))
    back = set.union(*(ids & tally.forgotten for ids, _ in states))
    return {
        "people": people,
        "days": days,
        "seed": seed,
        "merge_driver": setup,
        "pushes": tally.pushes,
        "pulls_with_conflicts": tally.conflicted_pulls,
        "hand_resolved_conflicts": sum(tally.conflicts.values()),
        "by_file": dict(tally.conflicts.most_common()),
        "same_entry_edited_two_ways": tally.real,
        "entries_stored": len(tally.stored),
        "forgotten": len(tally.forgotten),
        "entries_lost": len(lost),
        "entries_resurrected": len(back),
        "clones_agree_on_entries": all(ids == states[0][0] for ids, _ in states),
        "clones_agree_on_search": all(r == states[0][1] for _, r in states),
        "most_files_in_one_folder": fullest[0],
        "fullest_folder": fullest[1],
        "index_json_versioned": tracked_index,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--people", type=int, default=10)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-setup", action="store_true", help="No .gitattributes and no merge driver (the store as `memory init` made it before them).")
    ap.add_argument("--keep", action="store_true", help="Keep the temp dir (its path is printed).")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="memtool-team-"))
    os.environ.setdefault("XDG_CACHE_HOME", str(Path.home() / ".cache"))
    try:
        result = run(args.people, args.days, args.seed, not args.no_setup, workdir)
    finally:
        if not args.keep:
            subprocess.run(["rm", "-rf", str(workdir)], check=False)
        else:
            print(f"kept {workdir}", file=sys.stderr)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
