"""How exact is the offline token count? `memtool.text.count_tokens` against a real tokenizer.

The reference is the Llama-2 SentencePiece tokenizer shipped inside wordllama (offline, no
download). Three corpora:
  turns     every LoCoMo turn text (short chat messages)
  sessions  every LoCoMo session as a transcript ("Speaker: text" lines)
  repo      this repository's Python and Markdown files

For each text, ratio = offline count / reference count (> 1: the offline count is high). The
report gives the mean and 5th / 95th percentile of that per-text ratio, the aggregate ratio
(sum / sum), and the constant factor that would make the offline count match the reference on
aggregate (reference / offline).

    python bench/tokens.py --data /work/shared/bench/locomo-dev [--repo .] [--min-tokens 5]

One JSON object goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

from memtool.providers.wordllama import load_wordllama
from memtool.text import count_tokens

SESSION_RE = re.compile(r"^session_\d+$")
REPO_SUFFIXES = (".py", ".md")
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".pytest_cache", ".hypothesis", "memory"}
BATCH = 512


def locomo_texts(data: Path) -> tuple[list[str], list[str]]:
    """(turn texts, session transcripts) of every conversation file in `data`."""
    turns: list[str] = []
    sessions: list[str] = []
    for path in sorted(data.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        conv = doc.get("conversation", doc)
        for key, value in conv.items():
            if not SESSION_RE.match(key) or not isinstance(value, list):
                continue
            lines = [f"{t['speaker']}: {t['text']}" for t in value if t.get("text")]
            turns.extend(t["text"] for t in value if t.get("text"))
            if lines:
                sessions.append("\n".join(lines))
    return turns, sessions


def repo_texts(repo: Path) -> list[str]:
    out: list[str] = []
    for path in sorted(repo.rglob("*")):
        if path.suffix not in REPO_SUFFIXES or not path.is_file():
            continue
        if any(part in SKIP_DIRS for part in path.relative_to(repo).parts):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if text.strip():
            out.append(text)
    return out


def reference_counts(tokenizer, texts: list[str]) -> np.ndarray:
    counts: list[int] = []
    for i in range(0, len(texts), BATCH):
        enc = tokenizer.encode_batch(texts[i : i + BATCH], add_special_tokens=False)
        counts.extend(len(e.ids) for e in enc)
    return np.asarray(counts, dtype=np.float64)


def compare(tokenizer, texts: list[str], min_tokens: int) -> dict:
    ref = reference_counts(tokenizer, texts)
    ours = np.asarray([count_tokens(t) for t in texts], dtype=np.float64)
    keep = ref >= min_tokens  # a 2-token text gives a meaningless ratio
    ref, ours = ref[keep], ours[keep]
    ratio = ours / ref
    return {
        "texts": int(keep.sum()),
        "reference_tokens": int(ref.sum()),
        "offline_tokens": int(ours.sum()),
        "mean_ratio": round(float(ratio.mean()), 3),
        "p5_ratio": round(float(np.percentile(ratio, 5)), 3),
        "median_ratio": round(float(np.median(ratio)), 3),
        "p95_ratio": round(float(np.percentile(ratio, 95)), 3),
        "aggregate_ratio": round(float(ours.sum() / ref.sum()), 3),
        "factor_to_match": round(float(ref.sum() / ours.sum()), 3),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("/work/shared/bench/locomo-dev"), help="folder of LoCoMo conversation JSON files")
    ap.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent, help="repository whose .py/.md files are measured")
    ap.add_argument("--min-tokens", type=int, default=5, help="leave out texts shorter than this (reference tokens)")
    args = ap.parse_args(argv)
    if not args.data.is_dir():
        print(f"error: {args.data}: no such folder", file=sys.stderr)
        return 2
    tokenizer = load_wordllama().tokenizer
    tokenizer.no_padding()
    tokenizer.no_truncation()
    turns, sessions = locomo_texts(args.data)
    report = {
        "reference": "Llama-2 SentencePiece (wordllama tokenizer)",
        "min_tokens": args.min_tokens,
        "locomo_turns": compare(tokenizer, turns, args.min_tokens),
        "locomo_sessions": compare(tokenizer, sessions, args.min_tokens),
        "repo_py_md": compare(tokenizer, repo_texts(args.repo.resolve()), args.min_tokens),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
