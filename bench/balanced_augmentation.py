"""Does augmentation teach a detector that a cloak means offensive? tfidf-lr trained on COLD train plus
cloaked copies made by the README's realistic recipe, with the non-offensive posts cloaked as often and as
heavily as the offensive ones (``cloak perturb --balance``, the default) and without (``--no-balance``):
false positives on clean and on cloaked non-offensive COLD test posts.

Run from the repository root: ``.venv/bin/python -m bench.balanced_augmentation --cold DIR`` (about 9
minutes on 2 cores); writes ``bench/results/balanced_augmentation.json``. Every step is the command a user
runs, skipped when its output is there (a rerun continues).

- Recipe: ``cloak perturb --ops homophone,similar,emoji,split,abbrev,pinyin --targets lexicon+mined
  --strength poster`` over COLD train (terms mined from it), one copy of every post, added to the clean
  posts (``make demo``'s recipe); balanced, the offensive posts' terms and the words that mark the
  non-offensive posts, as many as make a non-offensive post hold as many characters of targets as an
  offensive one on average; unbalanced, the offensive posts' terms alone (the recipe before ``--balance``).
- How the copies differ by label, on COLD train: posts changed, edits a post, posts given pinyin or
  English they did not have.
- Detectors: ``attacks train --model tfidf-lr`` on COLD train alone (``plain``), on each augmented set, and
  on COLD train twice (``doubled``: the control, what a second copy of every post does with no cloak in it;
  logistic regression's fixed ``C`` and ``min_df`` see twice the posts, which moves its decisions).
- Unveil in front: ``cloak unveil --targets lexicon+mined --model cold.lm.gz`` (terms mined from COLD train,
  ``cloak fit-lm`` on it) reads every test file back before ``plain`` and ``balanced`` score it
  (``plain + unveil``, ``balanced + unveil``): whether reading back costs the non-offensive posts; and with
  ``--balance`` (the words that mark the non-offensive posts read back too), with the share of clean COLD
  test posts each leaves as they are. ``--balance``'s threshold is chosen first, on COLD dev
  (``balance_threshold``); where dev chooses other than the code's default the run stops before the test.
- Test: COLD test as it is, and cloaked by the same recipe with the terms mined from COLD train (seed 1),
  two ways: the offensive posts' terms (``offensive terms``: what ``attacks evaluate``'s cloak attacks
  cloak, the non-offensive posts that speak of 黑人 or 女权 cloaked where the offensive ones are) and the
  balanced targets (``balanced targets``: a non-offensive poster's own words cloaked too).
- Figures: each detector's false-positive rate on the non-offensive posts (label 0) and recall on the
  offensive ones, clean and cloaked, with bootstrap 95% intervals, and the change cloaking makes to the
  false-positive rate with its paired interval (the same posts drawn for both); and the ROC AUC of its
  offensive probability, with its interval: whether a change of rates is a change of ranking or only of
  the threshold's place.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

from bench.augmented_detectors import RECIPE, cloaked, detector
from bench.common import (BIN, RESULTS, WORK, auc_interval, cold_work, machine_info, ngram_model, parser, print_summary,
                          records, run_once, share_difference, share_interval, write_result)
from cloak.unveil.unveiler import BALANCE_THRESHOLD

LATIN = re.compile(r"[A-Za-z]")


def copies_by_label(copies: list[dict]) -> dict:
    """How often and how heavily each label's posts were cloaked."""
    figures = {}
    for label in sorted({r["label"] for r in copies}):
        posts = [r for r in copies if r["label"] == label]
        figures[str(label)] = {
            "posts": len(posts), "changed": round(sum(bool(r["cloak"]["edits"]) for r in posts) / len(posts), 4),
            "edits_a_post": round(sum(len(r["cloak"]["edits"]) for r in posts) / len(posts), 3),
            "latin_brought_in": round(sum(bool(LATIN.search(r["text"])) and not LATIN.search(r["source_text"])
                                          for r in posts) / len(posts), 4)}
    return figures


def predictions(work: Path, victim: Path, data: Path, steps: dict) -> list[dict]:
    """The detector's answer for each record of ``data`` (its ``label`` and ``probs``)."""
    out = work / f"pred_{victim.name}_{data.stem}.jsonl"
    run_once(f"predict {victim.name} {data.stem}", out, [BIN / "attacks", "predict", "--victim", victim, "--in", data,
                                                     "--out", out], steps)
    return [r["victim"] for r in records(out)]


UNVEIL = {"unveil": [], "unveil --balance": ["--balance"]}
THRESHOLDS = tuple(t / 2 for t in range(10, 21))  # 5.0 to 10.0: --balance's threshold is chosen among these


def balance_threshold(work: Path, steps: dict) -> dict:
    """``cloak unveil --balance``'s threshold chosen on COLD dev as ``bench.unveil --tune`` chooses the
    default's (``bench.unveil_tuning``'s objective; its penalties and priors kept): dev as it is, and
    cloaked by the recipe (seed 2) on the offensive terms and on the balanced targets, each cloaked term
    counted against the targets its cloak took."""
    from bench.unveil_tuning import choose_threshold, read_candidates
    from cloak.mining import build_balanced_targets, build_targets
    from cloak.unveil import Unveiler
    from cloak.unveil.scorers import shared_lm
    from cloak.unveil.unveiler import FUZZY, PRIORS, SINGLE

    train, dev = work / "train.jsonl", work / "dev.jsonl"
    balanced = build_balanced_targets("lexicon+mined", labelled=train)
    sets = [("clean", dev, None),
            ("offensive terms", cloaked(work, dev, "dev_offensive_terms", False, 2, steps),
             build_targets("lexicon+mined", labelled=train)),
            ("balanced targets", cloaked(work, dev, "dev_balanced_targets", True, 2, steps), balanced)]
    model = ngram_model(work, steps)
    unveiler = Unveiler(targets="lexicon+mined", mine_from=str(train), model=str(model), balance=True)
    setting = {"fuzzy": FUZZY, "single": SINGLE, "priors": dict(PRIORS)}
    listed = set(unveiler.terms)
    return {"data": "COLD dev as it is and cloaked by the recipe (seed 2) on the offensive terms and on the "
                    "balanced targets",
            "terms": {"cloaked by perturb --balance": len(balanced.terms), "read back by unveil --balance": len(listed),
                      "cloaked but not read back": len(set(balanced.terms) - listed)},
            **choose_threshold(read_candidates(unveiler, sets), setting, THRESHOLDS, shared_lm(str(model)))}


def unveiled(work: Path, data: Path, name: str, steps: dict) -> Path:
    """``data`` read back by ``cloak unveil`` set up as ``UNVEIL[name]`` says (terms mined from COLD train,
    the n-gram model fitted on it)."""
    flags = UNVEIL[name]
    out = work / f"unveiled{''.join('_' + f.lstrip('-') for f in flags)}_{data.stem}.jsonl"
    return run_once(f"{name} {data.stem}", out, [BIN / "cloak", "unveil", "--in", data, "--out", out, "--targets",
                                                 "lexicon+mined", "--mine-from", work / "train.jsonl", "--model",
                                                 ngram_model(work, steps), *flags, "-q"], steps)


def rates(labels: list[int], tests: dict[str, list[dict]]) -> dict:
    """False-positive rate, recall and ROC AUC on each test (``clean`` first; each post's answer, as
    ``predictions`` gives it), and each cloaking's change to the FPR."""
    negative = [k for k, label in enumerate(labels) if label == 0]
    positive = [k for k, label in enumerate(labels) if label != 0]
    flagged = {name: [int(a["label"] != 0) for a in answers] for name, answers in tests.items()}
    figures = {}
    for name, answers in tests.items():
        predicted = flagged[name]
        figures[name] = {"fpr": share_interval([predicted[k] for k in negative], [1] * len(negative)),
                         "recall": share_interval([predicted[k] for k in positive], [1] * len(positive)),
                         "auc": auc_interval(labels, [1 - a["probs"][0] for a in answers])}
        if name != "clean":
            figures[name]["fpr_change"] = share_difference([predicted[k] for k in negative],
                                                           [flagged["clean"][k] for k in negative])
    return figures


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "balanced_augmentation.json", cold=True, work=WORK / "balanced_augmentation")
    args = ap.parse_args()
    started = time.perf_counter()
    work, steps = cold_work(args, ("train", "dev", "test"))
    chosen = balance_threshold(work, steps)
    if chosen["chosen"]["threshold"] != BALANCE_THRESHOLD:  # the test is read with the dev choice only
        raise SystemExit(f"dev chose --balance's threshold {chosen['chosen']['threshold']}, not "
                         f"{BALANCE_THRESHOLD}: set BALANCE_THRESHOLD in cloak/unveil/unveiler.py and run again")
    copies = {name: cloaked(work, work / "train.jsonl", f"train_{name}", name == "balanced", 0, steps)
              for name in ("balanced", "unbalanced")}
    victims = {"plain": detector(work, "plain", [work / "train.jsonl"], steps),
               "doubled": detector(work, "doubled", [work / "train.jsonl"] * 2, steps)}
    victims.update({name: detector(work, name, [work / "train.jsonl", path], steps) for name, path in copies.items()})
    tests = {"clean": work / "test.jsonl",
             "offensive terms": cloaked(work, work / "test.jsonl", "test_offensive_terms", False, 1, steps),
             "balanced targets": cloaked(work, work / "test.jsonl", "test_balanced_targets", True, 1, steps)}
    clean_posts = records(tests["clean"])
    labels = [r["label"] for r in clean_posts]
    figures = {name: rates(labels, {test: predictions(work, victim, path, steps) for test, path in tests.items()})
               for name, victim in victims.items()}
    unchanged = {}
    for unveil in UNVEIL:
        read_back = {test: unveiled(work, path, unveil, steps) for test, path in tests.items()}
        figures.update({f"{name} + {unveil}": rates(labels, {test: predictions(work, victims[name], path, steps)
                                                             for test, path in read_back.items()})
                        for name in ("plain", "balanced")})
        same = [int(a["text"] == b["text"]) for a, b in zip(clean_posts, records(read_back["clean"]))]
        unchanged[unveil] = share_interval(same, [1] * len(same))
    result = {"benchmark": "bench/balanced_augmentation.py", "machine": machine_info(("scikit-learn",)),
              "recipe": " ".join(RECIPE), "copies_by_label": {n: copies_by_label(records(p)) for n, p in copies.items()},
              "test_cloaks_by_label": {n: copies_by_label(records(p)) for n, p in tests.items() if n != "clean"},
              "detectors": figures, "clean_unchanged_by_unveil": unchanged, "balance_threshold": chosen, "steps": steps,
              "seconds": round(time.perf_counter() - started, 1)}
    write_result(args.out, result)
    rows = [(f"{name}: FPR {test}", f"{f[test]['fpr']['share']}", f"{f[test]['fpr']['interval']}")
            for name, f in figures.items() for test in tests]
    print_summary(rows, args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
