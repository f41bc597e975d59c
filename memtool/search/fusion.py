"""Rank fusion of several scored channels."""

from __future__ import annotations

import numpy as np


def top_docs(scores: np.ndarray, allowed: np.ndarray, depth: int) -> np.ndarray:
    """The `depth` best allowed docs with a positive score in one channel, best first (a doc's rank is its place)."""
    cand = np.flatnonzero(allowed & (scores > 0))
    if cand.size > depth:
        cand = cand[np.argpartition(-scores[cand], depth - 1)[:depth]]
    return cand[np.argsort(-scores[cand], kind="stable")]


def weighted_rrf(channels: list[tuple[np.ndarray, float]], k: int) -> dict[int, float]:
    """score(d) = sum over channels (docs best first, weight) of weight / (k + rank of d in that channel)."""
    fused: dict[int, float] = {}
    for docs, weight in channels:
        if weight <= 0:
            continue
        for r, d in enumerate(docs.tolist(), 1):
            fused[d] = fused.get(d, 0.0) + weight / (k + r)
    return fused


def run_starts(keys: np.ndarray) -> np.ndarray:
    """Where each run of equal values starts in sorted `keys`."""
    return np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))


SIBLINGS_COUNTED = 3  # documents of one result whose scores add up in `sibling_sums`


def sibling_sums(docs: np.ndarray, scores: np.ndarray, group: np.ndarray, weight: float) -> dict[int, tuple[int, float]]:
    """result -> (position of its best doc in `docs`, s1 + w*s2 + w^2*s3) for `docs` best first,
    `scores` theirs: a result whose documents match in several places counts them all."""
    sums: dict[int, tuple[int, float]] = {}
    counted: dict[int, int] = {}
    for i, (g, s) in enumerate(zip(group[docs].tolist(), scores.tolist())):
        c = counted.get(g, 0)
        if c == 0:
            sums[g] = (i, s)
        elif c < SIBLINGS_COUNTED:
            sums[g] = (sums[g][0], sums[g][1] + weight**c * s)
        counted[g] = c + 1
    return sums
