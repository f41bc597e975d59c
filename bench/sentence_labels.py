"""Sentence labels for the offline compressor's sentence model, derived from the gold files of the
coding-session benchmarks (`../shared/bench/coding-sessions`, `../shared/bench/coding-real`).

Each transcript is read as `memory compress` reads it (memtool.transcripts, then the compressor's
parts and sentences, memtool.providers.local_sentences). A gold decision, action item or key fact
labels the sentences that hold at least LABEL_COVER of its content words (the scorer's words and
its `cover`, from score_entries.py), the best one and any within NEAR of it; a decision or an open
item wins over a fact on the same sentence, and between those two the closer match wins. A
sentence that matches a `must_not` phrase better than any gold item is "other". Nothing is
written: the labels are made again from the gold each time (the gold files stay in ../shared).

    python bench/sentence_labels.py [--bench ../shared/bench]   # label counts per file
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from memtool.providers.local_parts import parts
from memtool.providers.local_sentences import CLASSES, Sentence, sentences
from memtool.transcripts import read_transcript

SETS = ("coding-sessions", "coding-real")
LABEL_COVER = 0.5  # the scorer's own bar for a predicted item matching a gold one
NEAR = 0.85  # sentences this close to the best match are labelled too
# ../shared/bench beside the checkout (or beside the folder of worktrees it is in)
DEFAULT_BENCH = next(
    (d / "shared" / "bench" for d in Path(__file__).resolve().parents[1].parents if (d / "shared" / "bench").is_dir()), Path("../shared/bench")
)


@dataclass
class Session:
    set: str
    name: str
    text: str
    gold: dict
    said: list
    sentences: list[Sentence]
    labels: list[int]


def scorer(bench: Path):
    """The benchmark's score_entries module (its content_words, cover, score_entry)."""
    spec = importlib.util.spec_from_file_location("score_entries", bench / "score_entries.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load(bench: Path, sets: tuple[str, ...] = SETS) -> list[Session]:
    se = scorer(bench)
    out = []
    for name in sets:
        for path in se.transcripts(bench / name):
            gold = json.loads(Path(str(path) + ".gold.json").read_text(encoding="utf-8"))
            text = read_transcript(path)
            said, ss = sentences(parts(text))
            out.append(Session(name, path.name, text, gold, said, ss, label(ss, gold, se)))
    return out


def label(ss: list[Sentence], gold: dict, se) -> list[int]:
    words = [se.content_words(s.text) for s in ss]
    best: dict[int, tuple[int, float]] = {}  # sentence -> (class, cover)
    for cls, field in ((3, "key_facts"), (1, "decisions"), (2, "action_items")):
        for g in gold.get(field, []):
            gw = se.content_words(g)
            covers = [se.cover(gw, w) for w in words]
            top = max(covers, default=0.0)
            if top < LABEL_COVER:
                continue
            for i, c in enumerate(covers):
                if c >= max(LABEL_COVER, NEAR * top):
                    old = best.get(i)
                    if old is None or (old[0] == 3 and cls != 3) or (cls != 3 and c > old[1]):
                        best[i] = (cls, c)
    must_not = [se.content_words(m) for m in gold.get("must_not", [])]
    for i, w in enumerate(words):
        if i in best and any(se.cover(m, w) >= LABEL_COVER and se.cover(m, w) > best[i][1] for m in must_not):
            del best[i]
    return [best[i][0] if i in best else 0 for i in range(len(ss))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    args = ap.parse_args(argv)
    sessions = load(args.bench)
    total = [0] * len(CLASSES)
    for s in sessions:
        counts = [s.labels.count(c) for c in range(len(CLASSES))]
        total = [a + b for a, b in zip(total, counts)]
        golds = [len(s.gold.get(f, [])) for f in ("decisions", "action_items", "key_facts")]
        print(f"{s.name:55} sentences {len(s.sentences):4}  " + " ".join(f"{c}={n}" for c, n in zip(CLASSES, counts)) + f"  gold d/a/f {golds}")
    print(json.dumps(dict(zip(CLASSES, total))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
