"""Where the sentence model's ranking loses gold items: for each gold decision and action item of
both coding-session sets, whether any single candidate sentence covers it at the scorer's bar
(half its content words, score_entries.cover), and the held-out rank (8 folds by file, one model
fit per fold, no threshold search) of the best-ranked sentence that does.

    python bench/sentence_oracle.py [--bench ../shared/bench] [-v]   # -v: one line per gold item
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sentence_labels import DEFAULT_BENCH, load, scorer  # noqa: E402
from train_sentences import _model, all_features  # noqa: E402

FOLDS = 8


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("-v", action="store_true", help="one line per gold item")
    args = ap.parse_args(argv)
    se = scorer(args.bench)
    sessions = load(args.bench)
    feats = all_features(sessions)
    probs = {}
    for fold in range(FOLDS):
        held = [s for i, s in enumerate(sessions) if i % FOLDS == fold]
        m = _model([s for s in sessions if s not in held], feats, {"decision": 0.5, "open": 0.5}, {"decision": 4, "open": 4})
        probs.update({s.name: m.probabilities(feats[s.name]) for s in held})
    stats: dict[tuple[str, str], dict] = {}
    for s in sessions:
        p = probs[s.name]
        words = [se.content_words(x.text) for x in s.sentences]
        for cls, field in ((1, "decisions"), (2, "action_items")):
            rank = {int(i): r for r, i in enumerate(np.argsort(-p[:, cls], kind="stable"))} if len(p) else {}
            st = stats.setdefault((s.set, field), {"gold": 0, "coverable": 0, "ranks": []})
            for g in s.gold[field]:
                gw = se.content_words(g)
                covers = [se.cover(gw, w) for w in words]
                st["gold"] += 1
                hits = [i for i, c in enumerate(covers) if c >= 0.5]
                if hits:
                    st["coverable"] += 1
                    st["ranks"].append(min(rank[i] for i in hits))
                if args.v:
                    best = min(hits, key=rank.__getitem__) if hits else None
                    where = f"rank {rank[best]:3} p {p[best, cls]:.2f} | {s.sentences[best].text[:120]}" if best is not None else "no sentence covers it"
                    print(f"{s.name[:30]:30} {field[:3]} {g[:70]:70} -> {where}")
    for (name, field), st in stats.items():
        print(f"{name:16} {field:12} gold {st['gold']:3} coverable {st['coverable']:3} held-out rank of the best covering sentence {sorted(st['ranks'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
