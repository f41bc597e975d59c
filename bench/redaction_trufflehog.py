"""Writes a third held-out redaction corpus, from TruffleHog's detector tests (trufflesecurity/
trufflehog, AGPL-3.0 test data, pkg/detectors/*/*_test.go): each detector's first test case whose
`input` is a literal, a constant or a fmt.Sprintf of them and whose `want` values all appear in it
verbatim; the secrets are those
values (fake or revoked keys, in the code, config and log shapes the tests put them in). The
ordinary values are lines of TruffleHog's go.sum and `git log`. No rule of memtool/redact.py was
written from this project; the corpus is scored once, after the rules were changed, not tuned on.

    python bench/redaction_trufflehog.py --trufflehog DIR [--out /tmp/redaction_trufflehog] [--per-source 200]

DIR is a git checkout (or a bare mirror). The corpus is written outside the repository and not
committed (TruffleHog's licence is the AGPL): make it again from a checkout. Same files and fields
as bench/redaction_corpus.py; measured by `python bench/redaction.py --corpus /tmp/redaction_trufflehog`.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.redaction_external import SEED, VALUE, _git  # noqa: E402 (after the sys.path line)

# A Go string literal: raw (backtick) or interpreted ("...").
LITERAL = r"(?:`[^`]*`|\"(?:[^\"\\\n]|\\.)*\")"
# `name = "literal"` (const and var blocks, :=).
CONSTANT = re.compile(r"\b(\w+)\s*:?=\s*(" + LITERAL + r")")
# One test case: `input:` a literal, a constant or fmt.Sprintf(literal, args...), then `want:` a
# []string of literals or constants.
CASE = re.compile(r"input:\s*(?P<input>" + LITERAL + r"|\w+|fmt\.Sprintf\((?:[^()]|\([^()]*\))*\))\s*,\s*want:\s*\[\]string\{(?P<want>[^}]*)\}")
ITEM = re.compile(LITERAL + r"|\w+")


def _string(literal: str) -> str:
    if literal.startswith("`"):
        return literal[1:-1]
    body = literal[1:-1]
    return body.encode("utf-8").decode("unicode_escape") if "\\" in body else body


def _value(expr: str, constants: dict[str, str]) -> str | None:
    """The string a Go expression of the tests' three shapes evaluates to, or None."""
    expr = expr.strip()
    if expr[:1] in ("`", '"'):
        return _string(expr)
    if expr.startswith("fmt.Sprintf("):
        parts = ITEM.findall(expr[len("fmt.Sprintf(") : -1])
        if not parts or parts[0][:1] not in ("`", '"'):
            return None
        template, args = _string(parts[0]), [_value(p, constants) for p in parts[1:]]
        if any(a is None for a in args) or len(re.findall(r"%[sqv]", template)) != len(args):
            return None
        it = iter(args)
        return re.sub(r"%[sqv]", lambda m: (lambda v: json.dumps(v) if m.group() == "%q" else v)(next(it)), template)
    return constants.get(expr)


def secrets(repo: Path) -> tuple[list[dict], int]:
    names = [n for n in _git(repo, "ls-tree", "-r", "--name-only", "HEAD", "--", "pkg/detectors").split() if n.endswith("_test.go")]
    out, skipped = [], 0
    for name in sorted(names):
        if "integration" in name:
            continue
        source = _git(repo, "show", f"HEAD:{name}")
        constants = {n: _string(lit) for n, lit in CONSTANT.findall(source)}
        for case in CASE.finditer(source):
            text = _value(case.group("input"), constants)
            wants = [_value(w, constants) for w in ITEM.findall(case.group("want"))]
            if text is None or not wants or wants == [None] and case.group("want").strip() == "":
                continue
            if not all(w and w in text for w in wants):
                skipped += 1  # a result made of several parts (`id:secret`), not in the text as such
                continue
            out.append({"family": name.split("/")[2], "text": text.strip("\n"), "secrets": wants})
            break
    return out, skipped


def ordinary(repo: Path, per_source: int) -> list[dict]:
    rng = random.Random(SEED)
    sources = {
        "go.sum": _git(repo, "show", "HEAD:go.sum").splitlines(),
        "git_log": _git(repo, "log", "-n", "1500", "--format=%H %h %ad %s").splitlines(),
    }
    out = []
    for family, lines in sources.items():
        lines = sorted({line for line in lines if line.strip() and VALUE.search(line)})
        out += [{"family": family, "text": line} for line in rng.sample(lines, min(per_source, len(lines)))]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trufflehog", type=Path, required=True, help="a checkout or mirror of trufflesecurity/trufflehog")
    parser.add_argument("--out", type=Path, default=Path("/tmp/redaction_trufflehog"))
    parser.add_argument("--per-source", type=int, default=200)
    args = parser.parse_args()
    rows_s, skipped = secrets(args.trufflehog)
    rows_o = ordinary(args.trufflehog, args.per_source)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("secrets", rows_s), ("ordinary", rows_o)):
        (args.out / f"{name}.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
        print(f"{args.out / name}.jsonl: {len(rows)} rows")
    print(f"skipped {skipped} test cases whose wanted values are not in their input verbatim")


if __name__ == "__main__":
    main()
