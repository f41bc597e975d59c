"""How much does redaction catch, what does it wrongly touch, and how fast is it?

    python bench/redaction.py [--corpus tests/data/redaction] [--baseline REV] [--detect-secrets]
                              [--megabytes 4] [--repeat 3] [--text FILE_OR_DIR ...] [--show-misses]
                              [--through-memory] [--part tune|report] [--spans REV --text FILE_OR_DIR ...]

Corpora: tests/data/redaction (bench/redaction_corpus.py, the rules were written against it) and
tests/data/redaction_heldout (bench/redaction_heldout.py, never tuned on): report both.
--part splits a corpus in two by a hash of each row's text: rules may be tuned on `tune` (its misses
looked at with --show-misses); `report` is the part whose figure is the held-out one.
--through-memory scores what reaches the memory files instead of redact()'s output: every row in
one transcript given to `compress` (the kept transcript) and each row given to `log` (the daily
log), on a temporary root; a secret counts as left if it is anywhere under memory/.

Corpus (made by `bench/redaction_corpus.py`, fake values only):
  secrets.jsonl   a row is redacted when none of its "secrets" strings is left in the output;
  ordinary.jsonl  a row is touched when the output differs from the input.
Throughput: MB/s of `redact()` on prose, the repository's Markdown files (README, docs/, AGENTS.md)
repeated to --megabytes, in CPU time (so a loaded machine skews it less); best of --repeat runs,
the engines timed in turn within each.

--spans REV compares, file by file over --text, the spans redact() finds now with those of
memtool/redact.py at REV: on real files every added span is a new finding to check by eye (a false
positive or a real secret), every dropped one a finding lost.

--baseline REV also measures memtool/redact.py as it was at git revision REV (e.g. the commit
before a change), so a before/after figure comes from one run on one machine state.
--detect-secrets also measures Yelp's detect-secrets (`pip install detect-secrets`) with its
default plugins and filters, scanning each row as a file, its secrets redacted by value.

Prints per-family counts, then one line per engine: redacted %, touched %, MB/s.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memtool.redact import redact  # noqa: E402 (after the sys.path line)

Redactor = Callable[[str], str]


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def prose(megabytes: float, sources: list[Path] | None = None) -> str:
    """The repository's Markdown (or the files under ``sources``) repeated to ``megabytes``."""
    if sources:
        files = [f for src in sources for f in (sorted(src.rglob("*")) if src.is_dir() else [src])]
    else:
        files = [ROOT / "README.md", ROOT / "AGENTS.md", *sorted((ROOT / "docs").glob("*.md"))]
    text = "\n\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files if p.is_file())
    size = int(megabytes * 1_000_000)
    return (text * (size // len(text) + 1))[:size]


def part_of(row: dict) -> str:
    """`tune` or `report`: half of a corpus each, fixed by the row's text (not by its position)."""
    return "report" if hashlib.sha256(row["text"].encode("utf-8")).digest()[0] % 2 else "tune"


def baseline_module(rev: str):
    """memtool/redact.py at git revision `rev`, imported as a separate module."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:memtool/redact.py"], capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp()) / "redact_baseline.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("redact_baseline", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def baseline_redactor(rev: str) -> Redactor:
    module = baseline_module(rev)
    return lambda text: module.redact(text)[0]


def compare_spans(rev: str, sources: list[Path]) -> None:
    """Spans found now and not at `rev` (added) and the reverse (dropped), file by file."""
    old = baseline_module(rev)
    files = [f for src in sources for f in (sorted(src.rglob("*")) if src.is_dir() else [src]) if f.is_file()]
    changes = {"added": [], "dropped": []}
    read = 0
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        read += 1
        now = [(f.start, f.end) for f in redact(text)[1]]
        then = [(f.start, f.end) for f in old.redact(text)[1]]
        for name, spans, other in (("added", now, then), ("dropped", then, now)):
            for start, end in spans:
                if not any(s < end and start < e for s, e in other):
                    changes[name].append(f"{path}: ...{text[max(0, start - 50) : start]!r}[[{text[start:end][:60]!r}]]")
    print(f"{read} files: {len(changes['added'])} spans added, {len(changes['dropped'])} dropped against {rev}")
    for name, rows in changes.items():
        for row in rows:
            print(f"  {name:7} {row}")


def detect_secrets_redactor() -> Redactor:
    from detect_secrets.core.scan import scan_file
    from detect_secrets.settings import default_settings

    workdir = Path(tempfile.mkdtemp())
    settings = default_settings()
    settings.__enter__()  # entered for the whole run: the default plugins and filters

    def run(text: str, _settings=settings) -> str:  # holds the context: collecting it resets them
        path = workdir / "row.txt"
        path.write_text(text, encoding="utf-8")
        values = {s.secret_value for s in scan_file(str(path)) if s.secret_value}
        for value in sorted(values, key=len, reverse=True):
            text = text.replace(value, "[REDACTED]")
        return text

    return run


def through_memory(rows: list[dict]) -> tuple[list[str], str]:
    """What reaches a fresh memory root of each row (its part of the kept transcript and its log
    line, joined), and every file under memory/ together."""
    import os

    from memtool.app import open_memory
    from memtool.scaffold import init

    root = Path(tempfile.mkdtemp(prefix="memtool-redaction-"))
    os.environ["XDG_CONFIG_HOME"] = str(root / ".config")  # no user config, no approvals: the defaults
    init(root)
    mem = open_memory(root, embedder="fake" if "fake" in _embedders() else "wordllama", compressor="local", background_embed=False)
    marks = [f"=== row {i} ===" for i in range(len(rows))]
    mem.compress("\n\n".join(f"{mark}\n{row['text']}" for mark, row in zip(marks, rows)) + "\n", session="redaction-bench")
    for mark, row in zip(marks, rows):
        mem.log(f"{mark}\n{row['text']}")  # the row on lines of its own: a rule that looks at the line start sees the row's
    files = [p for p in (root / "memory").rglob("*") if p.is_file() and ".cache" not in p.parts]
    everything = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files)
    [kept] = [p.read_text(encoding="utf-8") for p in (root / "memory" / "transcripts").rglob("*.md")]
    logged = "".join(p.read_text(encoding="utf-8") for p in sorted((root / "memory").glob("????-??-??.md")))
    parts = []
    for i, mark in enumerate(marks):
        end = marks[i + 1] if i + 1 < len(marks) else None
        in_transcript = kept.split(mark + "\n", 1)[1].split("\n\n" + end, 1)[0] if end else kept.split(mark + "\n", 1)[1].rstrip("\n")
        line = logged.split(mark + "\n", 1)[1].split("\n- ", 1)[0].rstrip("\n")
        in_log = "\n".join(part[2:] for part in line.split("\n"))  # continuation lines are indented by two
        parts.append(in_transcript + "\n\x00\n" + in_log)
    return parts, everything


def _embedders() -> list[str]:
    from memtool.providers import EMBEDDER_GROUP, available

    return available(EMBEDDER_GROUP)


def score_memory(secrets: list[dict], ordinary: list[dict]) -> tuple[Counter, Counter, list[dict], list[dict]]:
    """`score` on what reaches the memory files (through_memory)."""
    caught, touched = Counter(), Counter()
    missed, wrongly = [], []
    parts, everything = through_memory(secrets)
    for row in secrets:
        if any(s in everything for s in row["secrets"]):
            missed.append(row)
        else:
            caught[row["family"]] += 1
    parts, _ = through_memory(ordinary)
    for row, part in zip(ordinary, parts):
        in_transcript, in_log = part.split("\n\x00\n")
        if in_transcript.strip() != row["text"].strip() or in_log.strip() != row["text"].strip():
            touched[row["family"]] += 1
            wrongly.append(row)
    return caught, touched, missed, wrongly


def score(redactor: Redactor, secrets: list[dict], ordinary: list[dict]) -> tuple[Counter, Counter, list[dict], list[dict]]:
    caught, touched = Counter(), Counter()
    missed, wrongly = [], []
    for row in secrets:
        out = redactor(row["text"])
        if any(s in out for s in row["secrets"]):
            missed.append(row)
        else:
            caught[row["family"]] += 1
    for row in ordinary:
        if redactor(row["text"]) != row["text"]:
            touched[row["family"]] += 1
            wrongly.append(row)
    return caught, touched, missed, wrongly


def throughput(engines: dict[str, Redactor], text: str, repeat: int) -> dict[str, float]:
    best = {name: float("inf") for name in engines}
    for _ in range(repeat):  # interleaved: machine load hits every engine alike
        for name, run in engines.items():
            start = time.process_time()
            run(text)
            best[name] = min(best[name], time.process_time() - start)
    return {name: len(text.encode("utf-8")) / 1e6 / seconds for name, seconds in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "tests" / "data" / "redaction")
    parser.add_argument("--baseline", metavar="REV", help="also measure memtool/redact.py at this git revision")
    parser.add_argument("--detect-secrets", action="store_true", help="also measure detect-secrets")
    parser.add_argument("--megabytes", type=float, default=4.0, help="size of the prose for throughput")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--text", type=Path, nargs="+", help="time these files (or folders) instead of the Markdown")
    parser.add_argument("--show-misses", action="store_true", help="print every missed or touched row")
    parser.add_argument(
        "--seeds",
        type=int,
        default=0,
        metavar="N",
        help="also regenerate the corpus with seeds 1..N (new random values, same shapes) and score memtool on each",
    )
    parser.add_argument("--part", choices=("tune", "report"), help="score only this half of the corpus (split by a hash of each row)")
    parser.add_argument("--spans", metavar="REV", help="compare the spans found in the --text files now and at REV, then stop")
    parser.add_argument("--through-memory", action="store_true", help="score what reaches the memory files through compress and log (memtool only)")
    args = parser.parse_args()
    if args.spans:
        if not args.text:
            parser.error("--spans needs --text FILE_OR_DIR ...")
        compare_spans(args.spans, args.text)
        return

    secrets, ordinary = load(args.corpus / "secrets.jsonl"), load(args.corpus / "ordinary.jsonl")
    if args.part:
        secrets, ordinary = [r for r in secrets if part_of(r) == args.part], [r for r in ordinary if part_of(r) == args.part]
    engines: dict[str, Redactor] = {"memtool": lambda text: redact(text)[0]}
    if args.baseline:
        engines[f"memtool@{args.baseline}"] = baseline_redactor(args.baseline)
    if args.detect_secrets:
        engines["detect-secrets"] = detect_secrets_redactor()

    families_s = Counter(row["family"] for row in secrets)
    families_o = Counter(row["family"] for row in ordinary)
    results = {name: score(run, secrets, ordinary) for name, run in engines.items()}
    if args.through_memory:
        engines = {"memtool (memory files)": engines["memtool"]}
        results = {"memtool (memory files)": score_memory(secrets, ordinary)}
    names = list(engines)
    print(
        f"corpus: {args.corpus}{f' (part {args.part})' if args.part else ''}: "
        f"{len(secrets)} secrets in {len(families_s)} families, {len(ordinary)} ordinary values"
    )
    print("\nsecrets redacted, per family: " + " | ".join(names))
    for family, total in sorted(families_s.items()):
        print(f"  {family:12} {total:4}  " + "  ".join(f"{results[n][0][family]:4}" for n in names))
    print("\nordinary values touched, per family: " + " | ".join(names))
    for family, total in sorted(families_o.items()):
        print(f"  {family:12} {total:4}  " + "  ".join(f"{results[n][1][family]:4}" for n in names))

    # detect-secrets writes a file per call: its speed is measured on 1/20 of the prose.
    text = prose(args.megabytes, args.text)
    fast = {n: run for n, run in engines.items() if n != "detect-secrets"}
    speed = throughput(fast, text, args.repeat)
    if "detect-secrets" in engines:
        speed.update(throughput({"detect-secrets": engines["detect-secrets"]}, text[: len(text) // 20], 1))
    what = "the given files" if args.text else "prose"
    print(f"\nengine            redacted      touched     MB/s on {what} ({args.megabytes:g} MB, CPU time, best of {args.repeat})")
    for name in names:
        caught, touched, missed, wrongly = results[name]
        print(f"  {name:16} {100 * sum(caught.values()) / len(secrets):6.1f} %  {100 * sum(touched.values()) / len(ordinary):6.1f} %  {speed[name]:8.1f}")
        if args.show_misses:
            for row in missed:
                print(f"    missed  [{row['family']}] {row['text'][:100]!r}")
            for row in wrongly:
                print(f"    touched [{row['family']}] {row['text'][:100]!r}")
    if args.seeds:
        reseeded(args.seeds)


def reseeded(n: int) -> None:
    """memtool on the corpus made with seeds 1..n: is a figure owed to one draw of random values?"""
    from bench.redaction_corpus import Fake, ordinary, secrets

    missed, touched, shapes = [], [], Counter()
    for seed in range(1, n + 1):
        rows_s, rows_o = secrets(Fake(seed)), ordinary(Fake(seed))
        _, _, miss, wrong = score(lambda text: redact(text)[0], rows_s, rows_o)
        missed.append(len(miss))
        touched.append(len(wrong))
        shapes.update(row["text"].split()[0] for row in miss + wrong)
    print(
        f"\nseeds 1..{n}: missed {min(missed)}-{max(missed)} of {len(rows_s)} secrets, touched "
        f"{min(touched)}-{max(touched)} of {len(rows_o)} ordinary values; rows starting with: {dict(shapes)}"
    )


if __name__ == "__main__":
    main()
