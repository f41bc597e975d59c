"""Writes a second held-out redaction corpus from sources memtool's rules were not written from:
the secrets are the `examples` of Nosey Parker's rules (praetorian-inc/noseyparker, Apache-2.0,
crates/noseyparker/data/default/builtin/rules/*.yml), each secret being what the rule's own pattern
captures in its example (the last group where it captures an id, a user or a host with the secret:
memtool keeps those, and redacts the secret); the ordinary values are lines of real files that hold git SHAs, content
hashes, versions and ids: gitleaks' go.sum, Nosey Parker's Cargo.lock, both projects' `git log`,
and the real coding sessions of ../shared/bench/coding-real (lines holding a hex, UUID, version or
base64 run). memtool/redact.py follows gitleaks' rules (config/gitleaks.toml), not these.

    python bench/redaction_external.py --noseyparker DIR --gitleaks DIR
        [--sessions ../shared/bench/coding-real] [--out tests/data/redaction_external] [--per-source 150]

DIR is a git checkout (or a bare mirror) of each project; rows are sampled from a fixed seed.
Same files and fields as bench/redaction_corpus.py; measured by
`python bench/redaction.py --corpus tests/data/redaction_external`. Do not tune rules on it.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
from pathlib import Path

import yaml

SEED = 37
RULES = "crates/noseyparker/data/default/builtin/rules"
# Rules whose examples name an account, a host or a hash rather than a credential.
SKIP_CATEGORIES = frozenset(("identifier", "hashed"))
# Which capture group is the secret where a pattern captures several parts (an id, a user, a host):
# the last one, but in these rules (user, password, host).
SECRET_GROUP = {"np.mongodb.1": 2, "np.postgres.1": 2}
# A line worth keeping as an ordinary value: a hex run (git SHA, digest), a UUID, a version or a
# run of base64.
VALUE = re.compile(r"\b[0-9a-f]{7,}\b|\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-|\bv?[0-9]+\.[0-9]+\.[0-9]+|[A-Za-z0-9+/]{20,}={0,2}")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def _files(repo: Path, prefix: str) -> dict[str, str]:
    """Files under ``prefix`` at HEAD (works on a bare mirror too)."""
    names = _git(repo, "ls-tree", "-r", "--name-only", "HEAD", "--", prefix).split()
    return {name: _git(repo, "show", f"HEAD:{name}") for name in names}


def _rust_to_python(pattern: str) -> str:
    """Nosey Parker's patterns are Rust regex: global flags first, \\z is \\Z."""
    flags = "".join(sorted(set("".join(re.findall(r"\(\?([imsx]+)\)", pattern)))))
    body = re.sub(r"\(\?[imsx]+\)", "", pattern).replace(r"\z", r"\Z")
    return (f"(?{flags})" if flags else "") + body


def secrets(np_repo: Path) -> tuple[list[dict], list[str]]:
    out, skipped = [], []
    for name, source in sorted(_files(np_repo, RULES).items()):
        if not name.endswith(".yml"):
            continue
        for rule in yaml.safe_load(source).get("rules", []):
            if SKIP_CATEGORIES & set(rule.get("categories") or ()):
                continue
            try:
                regex = re.compile(_rust_to_python(rule["pattern"]))
            except re.error as exc:
                skipped.append(f"{rule['id']}: {exc}")
                continue
            for example in rule.get("examples") or ():
                m = regex.search(example)
                if m is None:
                    skipped.append(f"{rule['id']}: its pattern does not match its example")
                    continue
                groups = [g for g in m.groups() if g] or [m.group()]
                secret = groups[SECRET_GROUP[rule["id"]] - 1] if rule["id"] in SECRET_GROUP else groups[-1]
                out.append({"family": Path(name).stem, "rule": rule["id"], "text": example, "secrets": [secret]})
    return out, skipped


def ordinary(np_repo: Path, gl_repo: Path, sessions: Path | None, per_source: int) -> list[dict]:
    rng = random.Random(SEED)
    sources: dict[str, list[str]] = {
        "go.sum": _git(gl_repo, "show", "HEAD:go.sum").splitlines(),
        "cargo.lock": [line for line in _git(np_repo, "show", "HEAD:Cargo.lock").splitlines() if line.startswith(("checksum", "version", "source", '"'))],
        "git_log": _git(gl_repo, "log", "-n", "400", "--format=%H %h %ad %s").splitlines()
        + _git(np_repo, "log", "-n", "400", "--format=commit %H%nDate:   %ad%n    %s").splitlines(),
    }
    if sessions:
        sources["sessions"] = [
            line.strip() for path in sorted(sessions.glob("*.md")) if path.name != "README.md" for line in path.read_text(encoding="utf-8").splitlines()
        ]
    out = []
    for family, lines in sources.items():
        lines = sorted({line for line in lines if line.strip() and VALUE.search(line)})
        for line in rng.sample(lines, min(per_source, len(lines))):
            out.append({"family": family, "text": line})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--noseyparker", type=Path, required=True, help="a checkout or mirror of praetorian-inc/noseyparker")
    parser.add_argument("--gitleaks", type=Path, required=True, help="a checkout or mirror of gitleaks/gitleaks")
    parser.add_argument("--sessions", type=Path, help="../shared/bench/coding-real")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "tests" / "data" / "redaction_external")
    parser.add_argument("--per-source", type=int, default=150)
    args = parser.parse_args()
    rows_s, skipped = secrets(args.noseyparker)
    rows_o = ordinary(args.noseyparker, args.gitleaks, args.sessions, args.per_source)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("secrets", rows_s), ("ordinary", rows_o)):
        (args.out / f"{name}.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
        print(f"{args.out / name}.jsonl: {len(rows)} rows")
    for line in skipped:
        print(f"skipped {line}")


if __name__ == "__main__":
    main()
