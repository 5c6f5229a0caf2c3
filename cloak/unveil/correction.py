"""Sentence-level correction: how many cloaked posts a read-back restores whole, as C²TU scores it.

Ma et al. 2025, "Breaking the Cloak! Unveiling Chinese Cloaked Toxicity with Homophone Graph and Toxic
Lexicon" (arXiv 2505.22184) score every method by this, over all posts, with ``source`` the cloaked text,
``prediction`` the method's output and ``gold`` the text before cloaking:

- a prediction of another length than its source is a miss (a false negative), whatever the post;
- a post with nothing cloaked (source == gold): left as it is, a true negative; changed, a false positive;
- a cloaked post (source != gold): read back to its gold text exactly, a true positive; else a false negative.

Precision is the true positives over every post the method changed (prediction != source), recall the
true positives over true positives and false negatives, F1 their harmonic mean. (C²TU's evaluation script
also strips blanks and quotes around the three texts where their lengths differ; the figures its paper and
README publish are without that step, and so is ``outcome``: with it, ToxiCloakCN's 19 posts whose cloak
changed their length move every method's F1 by about +0.005.)
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

OUTCOMES = ("tp", "fp", "fn", "tn")


def outcome(source: str, prediction: str, gold: str) -> tuple[str, bool]:
    """One post's outcome (``tp``, ``fp``, ``fn`` or ``tn``) and whether the method changed it."""
    changed = prediction != source
    if len(prediction) != len(source):
        return "fn", changed
    if source == gold:
        return ("tn" if prediction == gold else "fp"), changed
    return ("tp" if prediction == gold else "fn"), changed


@dataclass(frozen=True)
class Correction:
    """The counts of sentence-level correction over a set of posts, and the figures made of them."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    changed: int = 0  # posts the method changed: precision's denominator

    @classmethod
    def of(cls, outcomes: Iterable[tuple[str, bool]]) -> Correction:
        """The counts of posts' outcomes (what ``outcome`` gives for each)."""
        counts = dict.fromkeys(OUTCOMES, 0)
        changed = 0
        for kind, was_changed in outcomes:
            counts[kind] += 1
            changed += was_changed
        return cls(**counts, changed=changed)

    @property
    def posts(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def precision(self) -> float:
        return self.tp / self.changed if self.tp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def clean_kept(self) -> float | None:
        """The share of posts with nothing cloaked that the method left as they are (None: no such post)."""
        return self.tn / (self.tn + self.fp) if self.tn + self.fp else None


def sentence_correction(sources: Iterable[str], predictions: Iterable[str], golds: Iterable[str]) -> Correction:
    """C²TU's sentence-level correction counts of ``predictions`` (post i of each the same post).

    >>> c = sentence_correction(["拜仁", "你好", "拜仁"], ["白人", "你好", "拜仁"], ["白人", "你好", "白人"])
    >>> (c.tp, c.tn, c.fn, c.precision, c.recall)
    (1, 1, 1, 1.0, 0.5)
    """
    sources, predictions, golds = list(sources), list(predictions), list(golds)
    if not len(sources) == len(predictions) == len(golds):
        raise ValueError(f"sentence_correction: {len(sources)} sources, {len(predictions)} predictions and "
                         f"{len(golds)} gold texts: post i of each must be the same post")
    return Correction.of(outcome(s, p, g) for s, p, g in zip(sources, predictions, golds))
