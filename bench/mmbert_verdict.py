"""The verdict on MMBERT against its text-only twin over the seeds of ``bench.mmbert_cold``, or under a committed
protocol (``--protocol``, ``bench.mmbert_claim``'s one test): does Xue et al.'s (2025) claim hold?

Run from the repository root after ``python -m bench.mmbert_cold`` at each seed (each writing its own
``--out``): ``.venv/bin/python -m bench.mmbert_verdict bench/results/mmbert_e5_seed0.json
bench/results/mmbert_e5_seed1.json bench/results/mmbert_e5_seed2.json --out bench/results/mmbert_e5_verdict.json``.

The claim (Xue et al., arXiv:2508.00760, as issue 37 sets it as our goal): under homophones MMBERT loses
at most half the macro-F1 its text-only twin loses, the 95% interval of the difference of the drops (the
twin's minus MMBERT's) excludes zero, and MMBERT's clean macro-F1 is no more than 0.01 below the twin's.

- Figures: each seed's clean macro-F1 and drop under each op of every model the runs trained (MMBERT, the
  twin, and the ablation's two-modality MMBERTs where ``--ablation`` trained them), and their means.
- Intervals: a paired bootstrap over the test posts (``attacks.bootstrap``: one set of draws for every seed,
  model and test set): in each resample, the mean over the seeds of (the twin's drop - the model's drop),
  and of (the model's clean macro-F1 - the twin's); the 2.5th and 97.5th percentiles. Every seed must
  have been tested on the same posts. Seeds vary the training only, so the interval is over posts; the
  spread over seeds is in the per-seed figures.

Under a protocol (``--protocol bench/protocols/mmbert_claim.yaml bench/results/mmbert_claim_test.json``) the
verdict refuses a test made under another protocol (its SHA-256 recorded in the test's JSON) and records
the file's SHA-256 and commit. Its figures: every model's macro-F1 clean and under every cloak (the held-out
terms' too) and its drops, each with its interval; MMBERT against the twin, the fusion baseline, the best
text-only model, bert + augmentation and (where the test ran an addendum's arm) bert + augmentation + unveil
(differences and the ratio of the drops, each with its interval);
each seed's figures and their spread; the claim's parts at every seed alone; the share of the attacked
terms that training masked; and whether the mixture earns its place over fusion.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from bench.claim_protocol import (absolute, claim_parts, compared, load_protocol, resampled, same_protocol,
                                  seed_spread, undigits)
from bench.common import machine_info, parser, print_summary, read_json, relative, write_result

RESAMPLES = 2000
TWIN, CLAIMED = "text_only", "mmbert"
CLEAN_MARGIN = 0.01  # MMBERT's clean macro-F1 may be this much below the twin's


def digits(text: str) -> np.ndarray:
    """``bench.mmbert_cold``'s predictions, a digit a post, as an array."""
    return np.frombuffer(text.encode(), dtype=np.uint8).astype(np.int64) - ord("0")


def seed_runs(reports: list[dict]) -> tuple[np.ndarray, list[dict[str, dict[str, np.ndarray]]]]:
    """The gold labels and, per seed, {model: {test set: predictions}}; the seeds must share their test posts."""
    labels = {r["predictions"]["labels"] for r in reports}
    if len(labels) != 1:
        raise SystemExit("the runs were tested on different posts (or labels): give runs of one --test setting")
    runs = [{m: {k: digits(v) for k, v in sets.items()} for m, sets in r["predictions"].items() if m != "labels"}
            for r in reports]
    return digits(labels.pop()), runs


def intervals(labels: np.ndarray, runs: list[dict], resamples: int = RESAMPLES) -> dict[str, dict]:
    """Per model other than the twin: the bootstrap interval of the seeds' mean (twin's drop - model's drop)
    under each op, and of the mean (model's clean macro-F1 - twin's)."""
    from attacks.bootstrap import interval, macro_f1
    from attacks.bootstrap import resamples as draws_of

    models = [m for m in runs[0] if m != TWIN]
    ops = [k for k in runs[0][TWIN] if k != "clean"]
    values: dict[str, dict[str, list]] = {m: {k: [] for k in ("clean", *ops)} for m in models}
    for draws in draws_of(len(labels), resamples):
        for model in models:
            totals = {k: 0.0 for k in ("clean", *ops)}
            for run in runs:
                f1 = {m: {k: macro_f1(labels, p, 2, draws) for k, p in run[m].items()} for m in (TWIN, model)}
                totals["clean"] = totals["clean"] + f1[model]["clean"] - f1[TWIN]["clean"]
                for op in ops:
                    twin_drop, drop = (f1[m]["clean"] - f1[m][op] for m in (TWIN, model))
                    totals[op] = totals[op] + twin_drop - drop
            for key, total in totals.items():
                values[model][key].append(total / len(runs))
    return {m: {("clean_minus_twin" if k == "clean" else f"twin_drop_minus_drop_{k}"): interval(np.concatenate(v))
                for k, v in by.items()} for m, by in values.items()}


def means(reports: list[dict]) -> dict[str, dict]:
    """Per model: clean macro-F1 and each op's drop, each seed's and their mean."""
    out = {}
    for model, sets in reports[0]["results"].items():
        figures = {"clean_f1": [r["results"][model]["clean"]["all"]["f1"] for r in reports]}
        for op in (k for k in sets if k != "clean"):
            figures[f"drop_f1_{op}"] = [r["results"][model][op]["drop_f1"] for r in reports]
        out[model] = {k: {"seeds": [round(x, 4) for x in v], "mean": round(float(np.mean(v)), 4)}
                      for k, v in figures.items()}
    return out


def claim(figures: dict, bounds: dict) -> dict:
    """Xue et al.'s claim under homophones, part by part, and whether all of it holds."""
    mm, twin = figures[CLAIMED], figures[TWIN]
    mm_drop, twin_drop = mm["drop_f1_homophone"]["mean"], twin["drop_f1_homophone"]["mean"]
    difference = bounds[CLAIMED]["twin_drop_minus_drop_homophone"]
    parts = {"at_most_half_the_twins_drop": bool(twin_drop > 0 and mm_drop <= twin_drop / 2),
             "interval_excludes_zero": bool(difference[0] > 0),
             "clean_within_0.01": bool(mm["clean_f1"]["mean"] >= twin["clean_f1"]["mean"] - CLEAN_MARGIN)}
    return {"mmbert_homophone_drop": mm_drop, "twin_homophone_drop": twin_drop,
            "twin_drop_minus_mmbert_drop_95": difference, "mmbert_clean_f1": mm["clean_f1"]["mean"],
            "twin_clean_f1": twin["clean_f1"]["mean"], **parts, "holds": all(parts.values())}


# Who is compared with whom under a protocol: (model, baseline), where both were tested.
PAIRS = (("mmbert", "twin"), ("mmbert", "fusion"), ("fusion", "twin"), ("mmbert", "best_text_only"),
         ("mmbert", "bert_augmented"), ("twin", "bert_augmented"), ("mmbert", "bert_unveil"))


def protocol_verdict(protocol, test: dict) -> dict:
    """The verdict on a ``bench.mmbert_claim`` test under its protocol (see the module docstring)."""
    labels = undigits(test["labels"])
    found = {arm: [{k: undigits(v) for k, v in run.items()} for run in seeds]
             for arm, seeds in test["predictions"].items()}
    resamples, level = protocol["bootstrap"]["resamples"], protocol["bootstrap"]["level"]
    f1 = resampled(labels, found, resamples)
    by_seed = [resampled(labels, {arm: [seeds[i]] for arm, seeds in found.items()}, resamples)
               for i in range(len(test["seeds"]))]
    claim = claim_parts(f1, protocol)
    over_fusion = claim_parts(f1, protocol, "mmbert", "fusion") if "fusion" in f1 else None
    return {"claim": claim, "claim_by_seed": {str(s): claim_parts(f, protocol) for s, f in zip(test["seeds"], by_seed)},
            "mixture_over_fusion": over_fusion,
            "models": {arm: {**absolute(f1[arm], level), "seeds": seed_spread(labels, found[arm])} for arm in found},
            "comparisons": {f"{a}_vs_{b}": compared(f1, a, b, level) for a, b in PAIRS if a in f1 and b in f1},
            "term_overlap": test["test"]["term_overlap"], "held_out_terms": test["test"]["held_out"]}


def protocol_main(args) -> None:
    """``--protocol``: one test JSON of ``bench.mmbert_claim``, judged under the protocol it was made under."""
    started = time.perf_counter()
    protocol = load_protocol(args.protocol)
    if len(args.runs) != 1:
        raise SystemExit("--protocol judges one test: give bench.mmbert_claim's test JSON alone")
    test = read_json(args.runs[0])
    same_protocol(test.get("protocol"), protocol, relative(args.runs[0]))
    verdict = protocol_verdict(protocol, test)
    write_result(args.out, {"benchmark": "bench/mmbert_verdict.py", "protocol": protocol.record,
                            "protocol_commit": test["protocol_commit"],
                            **({"addendum": test["addendum"]} if "addendum" in test else {}),
                            "test": relative(args.runs[0]),
                            "chosen": test["chosen"], "setting": test["setting"], "seeds": test["seeds"],
                            "test_posts": len(test["labels"]), "test_sample": test["test"]["sample"],
                            "backbone": test["backbone"], "resamples": protocol["bootstrap"]["resamples"],
                            "met": {k: v for k, v in protocol["met"].items() if k != "rule"},  # what judged it
                            **verdict, "test_machine": test["machine"], "machine": machine_info()})
    claim = verdict["claim"]
    rows = [(f"{arm} {key}", f"{v['value']:.4f}", f"{v['interval']}")
            for arm, figures in verdict["models"].items() for key, v in figures["macro_f1"].items()]
    rows += [("MMBERT's homophone drop / the twin's", str(claim["ratio"]), f"{claim['ratio_interval']}"),
             ("claim holds", str(claim["holds"]), f"{claim['parts_met']} of 3 parts met"),
             ("mixture earns its place over fusion", str((verdict["mixture_over_fusion"] or {}).get("holds")), "")]
    print_summary(rows, args.out, time.perf_counter() - started, value_width=10)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("runs", nargs="+", type=Path, help="the per-seed JSON files of bench.mmbert_cold (with --protocol: "
                                                        "bench.mmbert_claim's test JSON)")
    ap.add_argument("--out", type=Path, required=True, help="the verdict (JSON)")
    ap.add_argument("--resamples", type=int, default=RESAMPLES, help="without --protocol (the protocol fixes its own)")
    ap.add_argument("--protocol", type=Path, default=None, help="the committed protocol the test was made under")
    args = ap.parse_args()
    if args.protocol:
        protocol_main(args)
        return
    started = time.perf_counter()
    reports = [read_json(path) for path in args.runs]
    labels, runs = seed_runs(reports)
    figures, bounds = means(reports), intervals(labels, runs, args.resamples)
    verdict = claim(figures, bounds)
    write_result(args.out, {"benchmark": "bench/mmbert_verdict.py", "runs": [relative(p) for p in args.runs],
                            "seeds": [r["seed"] for r in reports], "test_posts": len(labels),
                            "test_cloaks": reports[0].get("test_cloaks"), "backbone": reports[0].get("backbone"),
                            "resamples": args.resamples, "claim": verdict, "figures": figures, "intervals_95": bounds,
                            "machine": machine_info()})
    rows = [(f"{model} {key}", f"{v['mean']:.4f}", f"seeds {v['seeds']}")
            for model, by in figures.items() for key, v in by.items()]
    rows += [(f"{model} {key}", str(v), "95%, mean over seeds")
             for model, by in bounds.items() for key, v in by.items()]
    failed = [k for k, v in verdict.items() if v is False and k != "holds"]
    rows.append(("claim holds", str(verdict["holds"]), f"not met: {', '.join(failed)}" if failed else "every part met"))
    print_summary(rows, args.out, time.perf_counter() - started, value_width=22)


if __name__ == "__main__":
    main()
