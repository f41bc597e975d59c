"""Train the offline compressor's sentence model (memtool/providers/sentence_model.json).

Data: the labelled sentences of both coding-session benchmarks (bench/sentence_labels.py derives
them from the gold files in ../shared/bench). Model: multinomial logistic regression over
memtool.providers.local_sentences.features, standardised, class-weighted (inverse square root of
each class's share), L2-regularised (the embedding's weights EMBEDDING_L2, the rest L2), fitted by full-batch gradient descent with momentum from
zeros: deterministic. The keep thresholds for decisions and open items (and how many of each) are
chosen on out-of-fold probabilities of the training files (INNER_FOLDS folds by file), by the
scorer's own item F1 (score_entries.score_items) of the sentences they keep.

    python bench/train_sentences.py [--bench ../shared/bench] [--out memtool/providers/sentence_model.json]

bench/entries.py --cv trains the same way on all files but the held-out ones.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sentence_labels import DEFAULT_BENCH, Session, load, scorer  # noqa: E402

from memtool.providers.local_sentences import CLASSES, MODEL_FILE, SentenceModel, embed, features, picks  # noqa: E402

L2 = 0.1  # chosen by 8-fold cross-validation by file among 0.01, 0.1 and 1 (docs/compression.md)
EMBEDDING_L2 = 0.4  # on the embedding's 256 weights per class: 4 times the rest (8-fold CV by file among 1, 2, 4, 8 and 16 times, docs/compression.md)
STEPS = 400
RATE = 0.5
MOMENTUM = 0.9
INNER_FOLDS = 8
THRESHOLDS = tuple(round(0.1 + 0.05 * i, 2) for i in range(15))  # 0.10 .. 0.80
LIMITS = (2, 3, 4, 6)


def session_features(s: Session) -> np.ndarray:
    return features(s.sentences, len(s.said), embed)


def fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """mean, scale, weights, bias of the weighted, L2-regularised softmax regression."""
    mean = x.mean(axis=0)
    scale = np.maximum(x.std(axis=0), 1e-3)
    z = ((x - mean) / scale).astype(np.float64)
    k = len(CLASSES)
    onehot = np.eye(k)[y]
    counts = np.bincount(y, minlength=k).astype(np.float64)
    class_weight = np.sqrt(len(y) / (k * np.maximum(counts, 1)))
    sw = class_weight[y][:, None] / len(y)
    w, b = np.zeros((z.shape[1], k)), np.zeros(k)
    vw, vb = np.zeros_like(w), np.zeros_like(b)
    lam = np.full((z.shape[1], 1), L2)
    lam[: _embedding_width()] = EMBEDDING_L2  # the embedding comes first in a feature row
    for _ in range(STEPS):
        logits = z @ w + b
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        g = (p - onehot) * sw
        gw, gb = z.T @ g + lam * w, g.sum(axis=0)
        vw, vb = MOMENTUM * vw - RATE * gw, MOMENTUM * vb - RATE * gb
        w, b = w + vw, b + vb
    return mean.astype(np.float32), scale.astype(np.float32), w.astype(np.float32), b.astype(np.float32)


@lru_cache(maxsize=1)
def _embedding_width() -> int:
    return int(np.asarray(embed(["width"])).shape[1])


def train(sessions: list[Session], feats: dict[str, np.ndarray], se) -> SentenceModel:
    """A model fitted on `sessions`, its thresholds and limits chosen on inner folds of them."""
    probs: dict[str, np.ndarray] = {}
    for fold in range(INNER_FOLDS):
        held = [s for i, s in enumerate(sessions) if i % INNER_FOLDS == fold]
        rest = [s for i, s in enumerate(sessions) if i % INNER_FOLDS != fold]
        m = _model(rest, feats, {"decision": 0.5, "open": 0.5}, {"decision": 4, "open": 4})
        for s in held:
            probs[s.name] = m.probabilities(feats[s.name])
    thresholds, limits = {}, {}
    for cls, field in (("decision", "decisions"), ("open", "action_items")):
        best = (-1.0, 0.5, 4)
        for t in THRESHOLDS:
            for n in LIMITS:
                m = _model([], {}, {cls: t}, {cls: n}, dummy=True)
                f1 = np.mean([_f1(s, probs[s.name], cls, field, m, se) for s in sessions])
                if f1 > best[0] + 1e-9:
                    best = (f1, t, n)
        thresholds[cls], limits[cls] = best[1], best[2]
    return _model(sessions, feats, thresholds, limits)


def _f1(s: Session, p: np.ndarray, cls: str, field: str, m: SentenceModel, se) -> float:
    pred = [s.sentences[i].text for i in picks(s.sentences, p, cls, m)]
    return se.score_items(pred, s.gold.get(field, []), s.gold.get("must_not", []))["f1"]


def _model(sessions: list[Session], feats: dict[str, np.ndarray], thresholds: dict, limits: dict, dummy: bool = False) -> SentenceModel:
    if dummy:
        z = np.zeros(1, dtype=np.float32)
        return SentenceModel(z, z, z, z, {"decision": 1.0, "open": 1.0, **thresholds}, {"decision": 0, "open": 0, **limits})
    x = np.vstack([feats[s.name] for s in sessions if len(s.sentences)])
    y = np.concatenate([np.asarray(s.labels, dtype=np.int64) for s in sessions if len(s.sentences)])
    return SentenceModel(*fit(x, y), thresholds, limits)


def all_features(sessions: list[Session]) -> dict[str, np.ndarray]:
    return {s.name: session_features(s) for s in sessions}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--out", type=Path, default=MODEL_FILE)
    args = ap.parse_args(argv)
    sessions = load(args.bench)
    model = train(sessions, all_features(sessions), scorer(args.bench))
    args.out.write_text(model.to_json() + "\n", encoding="utf-8")
    print(
        json.dumps(
            {
                "out": str(args.out),
                "bytes": args.out.stat().st_size,
                "sentences": sum(len(s.sentences) for s in sessions),
                "thresholds": model.thresholds,
                "limits": model.limits,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
