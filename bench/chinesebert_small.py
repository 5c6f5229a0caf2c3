"""ChineseBERT against BERT on the same pretrained encoder at small data (issue 53 item 9): clean macro-F1 of
``attacks train --model bert|chinesebert --backbone ENCODER --backbone-layers 6`` trained on the 2,000 bundled
COLD posts with the defaults (3 epochs, lr 2e-5, the best epoch on a held-out tenth), on the 300 bundled test
posts, over several seeds, back to back.

Run from the repository root with multilingual-e5-small in ``weights/e5`` (``mmcloak-weights e5 weights/e5``)::

    .venv/bin/python -m bench.chinesebert_small --backbone weights/e5

The baseline, before ChineseBERT's fusion started as the identity on the encoder's own embeddings: bert
0.757, chinesebert 0.560 (issue 53). Each seed trains bert, then chinesebert (the machine's load falls on both
alike), with ``attacks train --seed S``, and scores the test posts with ``attacks predict``. Figures per run:
macro-F1 and its 95% bootstrap interval over the test posts, the best epoch's dev macro-F1, seconds; per kind,
the mean over the seeds; and the interval of chinesebert's mean minus bert's, the test posts resampled with
every run's predictions together (``attacks.bootstrap.mean_difference_interval``). The claim holds if that
interval reaches above zero: chinesebert is not below bert beyond the noise. ``--train`` / ``--test`` take
other labelled records (COLD converted by ``cloak convert --from cold``). Writes the JSON after every run; a
rerun skips the runs it holds (``--force`` redoes them), so an interrupted run continues.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import numpy as np

from bench.common import (BIN, REPO, RESULTS, WORK, machine_info, parser, print_summary, read_json, relative, run,
                          write_result)

KINDS = ("bert", "chinesebert")
BASELINE = {"bert": 0.757, "chinesebert": 0.560}  # issue 53, item 9: one run each, before the fix
SAMPLES = REPO / "samples" / "cold"


def train_and_score(args, kind: str, seed: int) -> dict:
    """One run: train ``kind`` with ``seed``, score the test posts; its figures and commands."""
    out = args.work / f"{kind}-seed{seed}"
    steps: dict = {}
    if not (out / "training.json").exists() or args.force:  # a run trained whole is kept: its seconds are one run's
        shutil.rmtree(out, ignore_errors=True)
        run([BIN / "attacks", "train", "--model", kind, "--backbone", args.backbone, "--backbone-layers",
             args.backbone_layers, "--train", args.train, "--seed", seed, "--out", out, "-q"], steps, "train")
    scored = out / "scored.jsonl"
    run([BIN / "attacks", "predict", "--victim", out, "--in", args.test, "--out", scored], steps, "predict")
    with open(scored, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    labels = [r["label"] for r in rows]
    predicted = [r["victim"]["label"] for r in rows]
    training = read_json(out / "training.json")
    with open(out / "log.json", encoding="utf-8") as f:
        log = json.load(f)
    return {"kind": kind, "seed": seed, "macro_f1": round(macro_f1(labels, predicted), 4),
            "interval": f1_interval(labels, predicted), "dev_macro_f1_best_epoch": best_dev(log),
            "train_seconds": training["seconds"], "posts": training.get("train_records"),
            "labels": labels, "predicted": predicted, "steps": steps}


def macro_f1(labels: list[int], predicted: list[int]) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score(labels, predicted, average="macro", zero_division=0))


def f1_interval(labels: list[int], predicted: list[int]) -> list[float]:
    """The 95% bootstrap interval of one run's macro-F1 over the test posts."""
    from attacks.bootstrap import interval, macro_f1 as resampled, resamples

    y, p = np.asarray(labels), np.asarray(predicted)
    return interval(np.concatenate([resampled(y, p, 2, draws) for draws in resamples(len(y))]))


def best_dev(log: list[dict]) -> float | None:
    """The dev macro-F1 of the epoch kept: the best ``score`` of the training log (one entry an epoch)."""
    return round(max(log, key=lambda e: e["score"])["dev_f1"], 4) if log else None


def summary(runs: dict[str, dict], seeds: list[int]) -> dict:
    """Per kind the mean macro-F1 over the seeds run; chinesebert's mean minus bert's, with its interval."""
    from attacks.bootstrap import mean_difference_interval

    done = {kind: [runs[f"{kind} seed={s}"] for s in seeds if f"{kind} seed={s}" in runs] for kind in KINDS}
    out: dict = {"by_kind": {kind: {"runs": len(r), "macro_f1": [x["macro_f1"] for x in r],
                                    "mean_macro_f1": round(float(np.mean([x["macro_f1"] for x in r])), 4)}
                             for kind, r in done.items() if r}}
    paired = [s for s in seeds if all(f"{k} seed={s}" in runs for k in KINDS)]
    if paired:
        labels = runs[f"bert seed={paired[0]}"]["labels"]
        first, second = ([runs[f"{k} seed={s}"]["predicted"] for s in paired] for k in ("chinesebert", "bert"))
        difference = np.mean([macro_f1(labels, p) for p in first]) - np.mean([macro_f1(labels, p) for p in second])
        bounds = mean_difference_interval(np.asarray(labels), first, second, 2)
        out["chinesebert_minus_bert"] = {"seeds": paired, "mean_difference": round(float(difference), 4),
                                         "interval": bounds, "not_below_beyond_noise": bounds[1] >= 0}
    return out


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "chinesebert_small.json", work=WORK / "chinesebert_small")
    ap.add_argument("--backbone", type=Path, default=Path("weights/e5"), help="the encoder (a transformers folder)")
    ap.add_argument("--backbone-layers", type=int, default=6, help="its first N layers")
    ap.add_argument("--train", type=Path, default=SAMPLES / "cold_train_2000.jsonl", help="labelled training records")
    ap.add_argument("--test", type=Path, default=SAMPLES / "cold_test_300.jsonl", help="labelled test records")
    ap.add_argument("--seeds", default="0,1,2", help="training seeds, comma-separated")
    ap.add_argument("--force", action="store_true", help="redo the runs the results file holds")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "2")  # two torch threads: the machine is shared
    seeds = [int(s) for s in args.seeds.split(",")]
    result = read_json(args.out, {}) if not args.force else {}
    runs = result.get("runs", {})
    started = time.perf_counter()
    for seed in seeds:
        for kind in KINDS:
            if f"{kind} seed={seed}" not in runs:
                runs[f"{kind} seed={seed}"] = train_and_score(args, kind, seed)
                result = {"benchmark": "bench/chinesebert_small.py", "machine": machine_info(("torch", "transformers")),
                          "backbone": str(args.backbone), "backbone_layers": args.backbone_layers,
                          "train": relative(args.train), "test": relative(args.test), "seeds": seeds,
                          "baseline_issue_53": BASELINE, **summary(runs, seeds), "runs": runs}
                write_result(args.out, result)
    rows = [(f"{kind} mean macro-F1", f"{v['mean_macro_f1']:.4f}", f"{v['runs']} seeds; baseline {BASELINE[kind]}")
            for kind, v in result.get("by_kind", {}).items()]
    if "chinesebert_minus_bert" in result:
        d = result["chinesebert_minus_bert"]
        rows.append(("chinesebert - bert", f"{d['mean_difference']:+.4f}", f"95% interval {d['interval']}"))
    print_summary(rows, relative(args.out), time.perf_counter() - started)


if __name__ == "__main__":
    main()
