"""cloak unveil as a defence in front of a detector (issue 52, part 2): each detector's drop under every cloak attack
and the search, with and without unveil in front, and augmentation beside it, as ``attacks report`` shows them.

Run from the repository root with COLD (``--cold DIR`` or ``MMCLOAK_COLD``)::

    .venv/bin/python -m bench.unveil_defence

Detectors: tfidf-lr trained on COLD train (``plain``), and on COLD train with its cloaked copies by the README's
realistic recipe, balanced (``augmented``, as ``bench.balanced_augmentation`` trains it). The defence:
``cloak unveil`` with the lexicon's terms and those mined from COLD train, an n-gram model fitted on COLD train (``cloak fit-lm``),
its other settings the defaults (chosen on COLD dev cloaks, never on test). Both are attacked by
``attacks evaluate --defence SPEC``, so each is evaluated as it is and with unveil in front, on the first
``--limit`` COLD test posts:

- ``seen``: every op alone, as the realism figures cloak (lexicon + mined terms, ``poster`` strength), and
  the search (greedy, 200 queries, deletion ranking): the search queries the whole pipeline, so against a
  defended detector it is an adaptive attack on unveil;
- ``held out``: cloaks the defaults were not chosen on: other settings of the ops (fuzzy tones, rare
  homophones only, two-level splits, look-alike letters in initials and pinyin, radical swaps that change
  the sound, which unveil does not read) and another seed.

``--neural FOLDER[,FOLDER]`` adds saved torch detectors, attacked the same way but by the cloak attacks alone
(the search would take hours on a CPU), as the views ``seen, neural`` and ``held out, neural``: the
recorded run takes ``bench.chinesebert_small``'s bert on e5's first 6 layers, trained on the 2,000 bundled
COLD posts (``WORK/chinesebert_small/bert-seed0``), and MMBERT's text-only twin as the issue-56
protocol trains it (``python -m bench.mmbert_claim choose``: e5's first 6 layers, the text warm-up, stage 3
at mask rate 0.15, seed 0; ``WORK/mmbert_claim/seed0/mask15/twin_stage3``, reached through a link
named ``mmbert-twin-mask15-seed0``, since a victim is named by its folder). 183 of the 1,000 posts are
among the protocol's 950 fresh test posts: this run reads them for the defence's figures alone, with a
candidate the protocol may not choose, and nothing of the protocol is chosen from it.

The figures are the report's defences view (``attacks report``): per detector, clean macro-F1, the mean
macro-F1 drop over the cloak attacks every row is judged by with its paired bootstrap 95% interval, and for
a defended detector what unveil changed (clean macro-F1: its cost on clean posts; the mean drop), each with
its interval. The bar (issue 52): with unveil in front, tfidf-lr's mean drop over the cloak attacks at most a
third of its drop without, clean macro-F1 within 0.005 of without. Writes
``bench/results/unveil_defence.json``; every step is skipped when its output is there, so a rerun continues.
"""
from __future__ import annotations

import time
from pathlib import Path

from bench.augmented_detectors import cloaked, detector
from bench.common import (BIN, RESULTS, WORK, cold_work, machine_info, ngram_model, parser, print_summary, read_json,
                          require, run, run_once, write_result)

CLOAKS = ["--targets", "lexicon+mined", "--strength", "poster"]
SEEN = ["--attacks", "cloak,search", *CLOAKS, "--query-budget", "200", "--importance", "deletion"]
SEEN_CLOAKS = ["--attacks", "cloak", *CLOAKS]
HELD_OUT_OPS = ("homophone:tone=fuzzy,homophone:common_share=0,split:depth=2,abbrev:lookalike=1,"
                "pinyin:mode=word:lookalike=1,radical:sound=any,homophone+emoji+pinyin")
HELD_OUT = ["--attacks", "cloak", "--ops", HELD_OUT_OPS, *CLOAKS, "--seed", "7"]


def evaluation(work: Path, name: str, victims: dict[str, Path], spec: str, attacks: list, limit: int,
               steps: dict) -> Path:
    """``attacks evaluate`` of the detectors with and without the defence, then its report; the report's folder."""
    out, report = work / f"ev_{name}", work / f"report_{name}"
    flags = [x for folder in victims.values() for x in ("--victim", folder)]
    run_once(f"evaluate {name}", out / "summary.json",
             [BIN / "attacks", "evaluate", *flags, "--data", work / "test.jsonl", "--limit", limit, *attacks,
              "--mine-from", work / "train.jsonl", "--defence", spec, "--out", out, "-q"], steps)
    run([BIN / "attacks", "report", out, "--out", report], steps, f"report {name}")
    return report


def verdict(view: dict) -> dict:
    """The bar, per defended detector: its mean drop at most a third of its detector's, clean within 0.005."""
    out = {}
    for row in view["rows"]:
        against = row.get("against")
        if not against:
            continue
        base = next(r for r in view["rows"] if r["row"] == against["row"])
        share = row["mean_drop"] / base["mean_drop"] if base["mean_drop"] else None
        out[row["row"]] = {"mean_drop": row["mean_drop"], "without": base["mean_drop"], "share_of_without": share,
                           "drop_met": share is not None and share <= 1 / 3,
                           "clean_change": against["clean_change"], "clean_interval": against["clean_interval"],
                           "clean_met": abs(against["clean_change"]) <= 0.005}
    return out


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "unveil_defence.json", cold=True, work=WORK / "unveil_defence")
    ap.add_argument("--limit", type=int, default=1000, help="COLD test posts attacked")
    ap.add_argument("--neural", default=None, metavar="FOLDER[,FOLDER]",
                    help="saved torch detectors attacked too, by the cloak attacks alone")
    args = ap.parse_args()
    started = time.perf_counter()
    work, steps = cold_work(args, ("train", "test"))
    copies = cloaked(work, work / "train.jsonl", "train_balanced", True, 0, steps)
    victims = {"plain": detector(work, "plain", [work / "train.jsonl"], steps),
               "augmented": detector(work, "augmented", [work / "train.jsonl", copies], steps)}
    model = ngram_model(work, steps)
    spec = f"unveil:targets=lexicon+mined:mine_from={work / 'train.jsonl'}:model={model}"
    groups = [("seen", victims, SEEN), ("held out", victims, HELD_OUT)]
    if args.neural:
        neural = {Path(f).name: require(Path(f), "python -m bench.chinesebert_small") for f in args.neural.split(",")}
        groups += [("seen, neural", neural, SEEN_CLOAKS),
                   ("held out, neural", neural, HELD_OUT)]
    views = {}
    for name, folders, attacks in groups:
        report = evaluation(work, name.replace(", ", "_").replace(" ", "_"), folders, spec, attacks, args.limit, steps)
        views[name] = read_json(report / "report.json")["defences"]
    result = {"benchmark": "bench/unveil_defence.py", "machine": machine_info(("scikit-learn",)),
              "posts": args.limit, "defence": spec, "views": views,
              "verdict": {name: verdict(view) for name, view in views.items()}, "steps": steps,
              "seconds": round(time.perf_counter() - started, 1)}
    write_result(args.out, result)
    rows = [(f"{name}: {row['row']}", f"mean drop {row['mean_drop']:.3f}", f"clean {row['clean_f1']:.3f}")
            for name, view in views.items() for row in view["rows"]]
    print_summary(rows, args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
