"""The verdict on MMBERT against its text-only twin over the seeds of ``bench.mmbert_cold``: does Xue et al.'s
(2025) claim hold?

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
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

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


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("runs", nargs="+", type=Path, help="the per-seed JSON files of bench.mmbert_cold")
    ap.add_argument("--out", type=Path, required=True, help="the verdict (JSON)")
    ap.add_argument("--resamples", type=int, default=RESAMPLES)
    args = ap.parse_args()
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
