"""Would a judge learnt from cloaks weigh ``cloak unveil``'s candidates better than its margin, and what would
it learn? On COLD dev only, where the unveiler's settings were chosen.

Run from the repository root after ``python -m bench.unveil --tune`` (its work folder):
``.venv/bin/python -m bench.unveil_judge`` (about 15 minutes on 2 cores). Writes
``bench/results/unveil_judge.json``.

Every candidate of COLD dev's cloaks (each op at its defaults, ``poster`` strength, seed 1) and of the
posts as they are, with its gain under the fitted n-gram model (``bench.unveil_tuning.candidates``), is
judged by the unveiler's margin (the gain less its bar, prior and penalties) and by gradient-boosted
classifiers: over the candidate's own features (gain, margin, reader, confusions, lengths, and its gain
against the best overlapping candidate's), and over those and two features of the post around it (how
many other candidates clear the unveiler's bar, how many there are). The classifiers are cross-fitted: two
folds by post, each post judged by the model fitted on the other fold; the candidates of clean posts weigh
1, 5 or 20 times as much as the others (the clean posts set the bar), each weight a judge. Each judge is
read at the lowest of its thresholds that leaves 97.5% of the clean dev posts unchanged (the rate the
unveiler is tuned to), in one round: what scores above it, the best first, none overlapping a better one
(a learnt score makes no reading of the text, as the unveiler's n-gram scorer does). Per op, the share of
cloaked terms read back, with a bootstrap 95% interval over posts.

Then each judge, at that threshold, reads sparse cloaks of the same posts: each op again, but each term
cloaked only at odds of 0.3 (``--rate 0.3``, seed 3), so that fewer cloaks share a post; the classifiers
were fitted on none of them (each post is still judged by the fold that did not see it).

The classifiers learn from the project's own cloaks, so a gain that rests on how those cloaks are made (the
ops cloak every occurrence of every target term at ``poster`` strength, so one cloak comes with others)
would not carry to real posts: the two learnt judges are there to tell the candidate's own evidence from
the post-level one.
"""
from __future__ import annotations

import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bench.common import (RESULTS, WORK, machine_info, parser, print_summary, require, share_interval,
                          write_result)
from bench.unveil_tuning import CLEAN, candidates, dev_cloaks, objective, read_candidates
from cloak.ops import available_ops

OPS = sorted(available_ops())
SPARSE, SPARSE_SEED = 0.3, 3  # the odds that a term is cloaked in the sparse cloaks, and their seed
WEIGHTS = (1.0, 5.0, 20.0)  # how much more a clean post's candidate weighs: the clean posts set the bar
THRESHOLDS = {"margin": np.arange(-3.0, 3.01, 0.25), "learnt": np.arange(-6.0, 6.01, 0.25)}
OWN = ("gain", "margin", "confusions", "one character", "term length", "cloak length", "gain over the best rival")
POST = ("other candidates clearing the bar", "candidates")


def features(found: list[tuple], margins: np.ndarray, readers: list[str], post_level: bool) -> np.ndarray:
    """One row per candidate of a post (each with its margin): its own features, then (``post_level``) the
    post's."""
    rows = []
    for k, (c, g) in enumerate(found):
        rival = max((g2 for j, (c2, g2) in enumerate(found) if j != k and c2.start < c.end and c.start < c2.end),
                    default=g - 30.0)
        row = [g, margins[k], c.fuzzy, len(c.dst) == 1, len(c.dst), c.end - c.start, g - rival]
        row += [c.reader == r for r in readers]
        if post_level:
            row += [sum(m > 0 for m in margins) - (margins[k] > 0), len(found)]
        rows.append(row)
    return np.asarray(rows, dtype=float).reshape(len(found), len(OWN) + len(readers) + len(POST) * post_level)


@dataclass(frozen=True)
class Folds:
    """What the classifiers are fitted to, post by post: whether each candidate is right, the post's fold (by
    its id) and whether it is a clean post."""
    labels: list[np.ndarray]
    fold: np.ndarray
    clean: np.ndarray

    @classmethod
    def of(cls, posts: list[tuple]) -> Folds:
        return cls([np.asarray([(c.start, c.end, c.dst) in post[1] for c, _ in post[3]]) for post in posts],
                   np.asarray([zlib.crc32(post[4].encode()) % 2 for post in posts]),
                   np.asarray([post[0] == "clean" for post in posts]))


def cross_fitted(folds: Folds, rows: list[np.ndarray], weight_clean: float, fit_on: int) -> list[np.ndarray]:
    """Each post's candidates' log-odds of being right, from the classifier fitted on the other fold of the
    first ``fit_on`` posts, the candidates of clean posts weighing ``weight_clean`` times as much as the others."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    scores: list[np.ndarray] = [np.empty(0)] * len(rows)
    for held in (0, 1):
        fit = [k for k in range(fit_on) if folds.fold[k] != held and len(rows[k])]
        model = HistGradientBoostingClassifier(max_iter=300, random_state=0).fit(
            np.concatenate([rows[k] for k in fit]), np.concatenate([folds.labels[k] for k in fit]),
            sample_weight=np.concatenate([np.full(len(rows[k]), weight_clean if folds.clean[k] else 1.0)
                                          for k in fit]))
        for k in np.flatnonzero(folds.fold == held):
            if len(rows[k]):
                p = np.clip(model.predict_proba(rows[k])[:, 1], 1e-9, 1 - 1e-9)
                scores[k] = np.log(p / (1 - p))
    return scores


def read_back(candidates: Sequence, margins: Sequence[float]) -> list[tuple]:
    """The (start, end, term) read back in one post: the candidates whose margin is above 0, the best first,
    none overlapping a better one."""
    taken: list[tuple] = []
    for m, s, e, dst in sorted(((m, c.start, c.end, c.dst) for c, m in zip(candidates, margins)), reverse=True):
        if m <= 0:
            break
        if all(e <= a or b <= s for a, b, _ in taken):
            taken.append((s, e, dst))
    return taken


def at_threshold(posts: list[tuple], scores: list[np.ndarray], threshold: float) -> dict:
    """Clean posts unchanged and each op's terms read back, post by post, reading back what scores above
    ``threshold``."""
    clean, read, cloaked = [], {}, {}
    for post, score in zip(posts, scores):
        name, right, count, found = post[:4]
        taken = read_back([c for c, _ in found], score - threshold)
        if name == "clean":
            clean.append(int(not taken))
        else:
            read.setdefault(name, []).append(sum(t in right for t in taken))
            cloaked.setdefault(name, []).append(count)
    return {"clean": clean, "read": read, "cloaked": cloaked}


def shares(tally: dict) -> dict:
    return {op: share_interval(tally["read"][op], tally["cloaked"][op]) for op in sorted(tally["read"])}


def figures(posts: list[tuple], scores: list[np.ndarray], thresholds: np.ndarray, sparse: int) -> dict:
    """The judge at the lowest threshold leaving CLEAN of clean posts unchanged, on the posts it was chosen
    on and on the last ``sparse`` posts (the sparse cloaks)."""
    chosen, held = slice(0, len(posts) - sparse), slice(len(posts) - sparse, len(posts))
    for threshold in thresholds:
        tally = at_threshold(posts[chosen], scores[chosen], threshold)
        unchanged = sum(tally["clean"]) / len(tally["clean"])
        if unchanged >= CLEAN:
            read = shares(tally)
            return {"threshold": round(float(threshold), 2),
                    "clean_unchanged": share_interval(tally["clean"], [1] * len(tally["clean"])),
                    "read_back": read,
                    "objective": round(objective(unchanged, {op: s["share"] for op, s in read.items()}), 4),
                    "read_back_sparse": shares(at_threshold(posts[held], scores[held], threshold))}
    return {"threshold": None}


def terms_a_post(posts: list[tuple]) -> float:
    """The mean number of terms cloaked in a cloaked post."""
    counts = [post[2] for post in posts if post[0] != "clean" and post[2]]
    return round(sum(counts) / len(counts), 2)


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "unveil_judge.json", work=WORK / "unveil")
    args = ap.parse_args()
    from cloak.unveil import Unveiler
    from cloak.unveil.unveiler import THRESHOLD, margin

    started, steps = time.time(), {}
    terms = require(args.work / "terms.tsv", "python -m bench.unveil --tune")
    model = require(args.work / "cold.lm.gz", "python -m bench.unveil --tune")
    unveiler = Unveiler(lexicon=str(terms), model=str(model))
    fitted = candidates(unveiler, args.work, terms, OPS, steps)
    # the same posts cloaked more sparsely: fewer cloaks share a post, and none of them is fitted on
    sparse = read_candidates(unveiler, dev_cloaks(args.work, terms, OPS, steps, seed=SPARSE_SEED, rate=SPARSE))
    posts = fitted + sparse
    margins = [np.asarray([margin(c, g, THRESHOLD) for c, g in post[3]]) for post in posts]
    judges = {"the unveiler's margin": figures(posts, margins, THRESHOLDS["margin"], len(sparse))}
    readers, folds = sorted({c.reader for post in posts for c, _ in post[3]}), Folds.of(posts)
    for features_of, post_level in (("the candidate's own features", False), ("with the post's other candidates", True)):
        rows = [features(post[3], m, readers, post_level) for post, m in zip(posts, margins)]
        for weight in WEIGHTS:
            name = f"learnt: {features_of}, clean posts x{weight:g}"
            judges[name] = {"weight_clean": weight, **figures(
                posts, cross_fitted(folds, rows, weight, len(fitted)), THRESHOLDS["learnt"], len(sparse))}
            print(f"{name}: {judges[name].get('objective')}", flush=True)
    write_result(args.out, {"benchmark": "bench/unveil_judge.py", "machine": machine_info(["scikit-learn"]),
                            "posts": len(fitted), "sparse_posts": len(sparse), "sparse_rate": SPARSE,
                            "terms_a_cloaked_post": terms_a_post(fitted), "terms_a_sparse_post": terms_a_post(sparse),
                            "features": {"own": [*OWN, "reader"], "post": POST}, "clean": CLEAN, "judges": judges,
                            "steps": steps, "seconds": round(time.time() - started, 1)})
    rows = [(f"{name}: {op}{kind}", f"{fig[key][op]['share']}", f"{fig[key][op]['interval']}")
            for name, fig in judges.items() if fig["threshold"] is not None for op in ("homophone", "abbrev")
            for key, kind in (("read_back", ""), ("read_back_sparse", ", sparse"))]
    print_summary(rows, args.out, time.time() - started)


if __name__ == "__main__":
    main()
