"""Choosing ``cloak unveil``'s threshold and priors on COLD dev, for ``bench.unveil --tune`` (not a benchmark
of its own).

Every candidate of COLD dev's cloaks (each op at its defaults, ``poster`` strength, seed 1: the test
figures use seed 0) and of COLD dev's posts as they are is listed once; then each setting is judged by
reading each post as the unveiler reads it, by its likeliest reading under the n-gram model with each
candidate at the setting's cost (``cloak.unveil.lattice``). A coordinate search from the current defaults moves one
setting at a time while the objective improves: the mean over the ops of the share of cloaked terms read
back, each capped at CAP so that no family is traded away for another's last points, less a steep
penalty for each point of clean posts changed beyond 1 - CLEAN.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bench.common import BIN, run_once
from bench.restoration import cloaked_spans
from cloak.common.io import read_records
from cloak.targets import Lexicon

if TYPE_CHECKING:
    from cloak.unveil import CharNgramLM, Unveiler

CAP = 0.92
CLEAN = 0.975
SEED = 1
READERS = ("homophone", "pinyin", "abbrev", "split", "similar", "emoji", "english", "shuffle", "noise")
# only what the context scorer decides is tuned; these ops are read back character by character
UNSCORED = ("traditional", "variant", "zerowidth", "fullwidth")


def truth(lexicon: Lexicon, record: dict) -> tuple[set, int]:
    """The (start, end, term) of each cloaked term in the cloaked text, and how many terms were cloaked."""
    spans = cloaked_spans(lexicon, record)
    return set(spans), len(spans)


def candidates(unveiler: Unveiler, work: Path, terms: Path, ops: list[str], steps: dict) -> list[tuple]:
    """``read_candidates`` of COLD dev's posts as they are and of each op's cloaks of ``terms`` in them, read
    by ``unveiler`` (at its defaults, with ``terms`` and the n-gram model fitted on COLD train)."""
    sets = [("clean", work / "dev.jsonl", None), *dev_cloaks(work, terms, ops, steps)]
    return read_candidates(unveiler, sets)


def dev_cloaks(work: Path, terms: Path, ops: list[str], steps: dict, seed: int = SEED,
               rate: float | None = None) -> list[tuple[str, Path, Lexicon]]:
    """(op, file, lexicon) of COLD dev cloaked by each scored op of ``ops`` on ``terms`` (``poster``
    strength, ``seed``; each term cloaked at odds ``rate`` if given), made once."""
    lexicon, sets = Lexicon.from_file(terms), []
    suffix, name, flags = ("", "", []) if rate is None else (f"_rate{rate}", f", rate {rate}", ["--rate", rate])
    for op in (o for o in ops if o not in UNSCORED):
        out = work / f"dev_{op}{suffix}.jsonl"
        sets.append((op, run_once(f"cloak dev {op}{name}", out, [
            BIN / "cloak", "perturb", "--in", work / "dev.jsonl", "--out", out, "--ops", op, "--lexicon", terms,
            "--strength", "poster", *flags, "--seed", seed, "-q"], steps), lexicon))
    return sets


def read_candidates(unveiler: Unveiler, sets: list[tuple[str, Path, Lexicon | None]]) -> list[tuple]:
    """(name, truth, cloaked terms, [(candidate, gain)], the record's id, the text the candidates are in) of
    every post of each (name, file, the lexicon its cloaks took their terms from) in ``sets``: ``clean`` (no
    lexicon) for posts as they are. Posts whose characters the unveiler reads back at once are left out
    (their places moved)."""
    unveiler.prepare()
    posts = []
    for name, path, lexicon in sets:
        for _, record in read_records(str(path)):
            view, normalised, found = unveiler.candidates(record["text"])
            if normalised:
                continue
            right, cloaked = truth(lexicon, record) if lexicon is not None else (set(), 0)
            gains = unveiler.gains(view, found) if found else []
            posts.append((name, right, cloaked, list(zip(found, gains)), record["id"], view))
    return posts


def read_posts(posts: list[tuple], setting: dict, lm: CharNgramLM,
               memo: dict | None = None) -> list[tuple[str, int, int]]:
    """Each post read under ``setting`` by its likeliest reading under ``lm``, as the unveiler reads it: (its
    set's name, hits, of how many): for a cloak the terms read back right of those cloaked, for a clean post
    1 of 1 if anything was read back. ``memo``: the readings of these posts under earlier settings, by their
    candidates' costs (a move of one reader's prior leaves most posts' costs as they were)."""
    from cloak.unveil.lattice import best_reading
    from cloak.unveil.unveiler import cost

    penalties = {"fuzzy": setting["fuzzy"], "single": setting["single"], "priors": setting["priors"]}
    memo = {} if memo is None else memo
    counts = []
    for k, (name, right, count, found, _, text) in enumerate(posts):
        candidates = [c for c, _ in found]
        costs = tuple(cost(c, setting["threshold"], **penalties) for c in candidates)
        if (k, costs) not in memo:
            memo[k, costs] = [candidates[j][:3] for j in best_reading(lm, text, candidates, costs)]
        taken = memo[k, costs]
        counts.append((name, int(bool(taken)), 1) if name == "clean" else (name, sum(t in right for t in taken), count))
    return counts


def judge(posts: list[tuple], setting: dict, lm: CharNgramLM,
          memo: dict | None = None) -> tuple[float, dict[str, float]]:
    """(the share of clean posts unchanged, the share of cloaked terms read back per op) under ``setting``
    (``read_posts``)."""
    clean = changed = 0
    read, cloaked = {}, {}
    for name, hits, total in read_posts(posts, setting, lm, memo):
        if name == "clean":
            clean, changed = clean + 1, changed + hits
        else:
            cloaked[name] = cloaked.get(name, 0) + total
            read[name] = read.get(name, 0) + hits
    return 1 - changed / max(1, clean), {op: read[op] / max(1, cloaked[op]) for op in sorted(cloaked)}


def objective(clean: float, shares: dict[str, float]) -> float:
    return sum(min(CAP, v) for v in shares.values()) / len(shares) - 20 * max(0.0, CLEAN - clean)


def choose_threshold(posts: list[tuple], setting: dict, thresholds: Sequence[float], lm: CharNgramLM) -> dict:
    """The threshold of ``thresholds`` with the best objective, the other settings as ``setting`` gives them
    (the first of equals); each one's figures beside it."""
    tried = []
    for threshold in thresholds:
        clean, shares = judge(posts, dict(setting, threshold=threshold), lm)
        tried.append({"threshold": threshold, "clean": round(clean, 4), "shares": shares,
                      "objective": objective(clean, shares)})
    return {"chosen": max(tried, key=lambda t: t["objective"]), "tried": tried}


def search(posts: list[tuple], start: dict, lm: CharNgramLM) -> tuple[dict, list[dict]]:
    """The coordinate search from ``start``; the setting it ends at and every improvement on the way."""
    moves = [("threshold", (-1, -0.5, 0.5, 1)), ("fuzzy", (-2, 2)), ("single", (-1, 1))]
    moves += [(("priors", r), (-2, -1, 1, 2)) for r in READERS]
    best, memo = dict(start, priors=dict(start["priors"])), {}
    clean, shares = judge(posts, best, lm, memo)
    trail = [{"setting": best, "clean": round(clean, 4), "shares": shares, "objective": objective(clean, shares)}]
    improved = True
    while improved:
        improved = False
        for key, deltas in moves:
            for delta in deltas:
                setting = dict(best, priors=dict(best["priors"]))
                if isinstance(key, tuple):
                    setting["priors"][key[1]] = setting["priors"].get(key[1], 0) + delta
                else:
                    setting[key] += delta
                clean, shares = judge(posts, setting, lm, memo)
                if objective(clean, shares) > trail[-1]["objective"] + 1e-9:
                    best, improved = setting, True
                    trail.append({"setting": setting, "clean": round(clean, 4), "shares": shares,
                                  "objective": objective(clean, shares)})
                    print(f"tuning: {setting} clean {clean:.4f} objective {trail[-1]['objective']:.4f}", flush=True)
    return best, trail


def tune(work: Path, terms: Path, model: Path, ops: list[str], steps: dict) -> dict:
    """Choose the threshold, penalties and priors on COLD dev; what was chosen, how, and on what."""
    from cloak.unveil import Unveiler
    from cloak.unveil.scorers import shared_lm
    from cloak.unveil.unveiler import FUZZY, PRIORS, SINGLE, THRESHOLD

    posts = candidates(Unveiler(lexicon=str(terms), model=str(model)), work, terms, ops, steps)
    start = {"threshold": THRESHOLD, "fuzzy": FUZZY, "single": SINGLE, "priors": dict(PRIORS)}
    chosen, trail = search(posts, start, shared_lm(str(model)))
    return {"rule": f"coordinate search from the defaults; objective: mean share of cloaked terms read back over "
                    f"the ops (each capped at {CAP}) less 20 x the shortfall of clean posts unchanged below {CLEAN}",
            "data": f"COLD dev: each op's cloaks (poster strength, seed {SEED}) and the posts as they are; "
                    "each read by its likeliest reading", "posts_with_candidates": len(posts),
            "start": trail[0], "chosen": trail[-1], "trail": trail}
