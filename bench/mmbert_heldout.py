"""Does MMBERT's edge over its twin hold on cloaks of terms its training never masked? A real test on COLD.

``bench.mmbert_cold --stage3-term-mask`` masks the training posts' terms whole (the lexicon's and those mined
from the training posts), and its test cloaks the lexicon's terms, all among them: its figures cannot tell a
model that reads a cloaked word through its sound and glyphs from one that learnt to do without the words it
saw masked. ``--stage3-term-holdout SHARE`` keeps a share of those terms never masked (chosen by a hash of
the term: the same at every seed, ``mmbert.train.held_out``). This test cloaks the run's test posts by
homophone (``poster`` strength, as ``bench.mmbert_cold``'s test) on the held-out terms alone (test set
``homophone``) and on the masked terms alone (``homophone_seen``); a post holding none stays as it is.
Both models saw the held-out terms in their training posts, and cloaked in the posts' cloaked copies: what
they never saw is those terms masked.

A run trained without ``--stage3-term-holdout`` is tested on the same split (``--hold-out``, default 0.5):
without term masks, the reference where no term was masked; with them, the control where the held-out terms
were masked too (``held_out_masked_in_training`` in the figures).

Run from the repository root on a finished ``bench.mmbert_cold`` run: its ``--work`` and the folder of the
seed's models in it (``runs_N`` for seed 0, ``runs_N_seedS`` for another)::

    .venv/bin/python -m bench.mmbert_heldout --work runs/mmbert-e5-holdout --runs runs_5000_seed2 \\
        --out bench/results/mmbert_e5_holdout_heldout_seed2.json

The figures have ``bench.mmbert_cold``'s form over the test sets clean, homophone and homophone_seen
(macro-F1 overall and on the posts cloaked, the drops, a paired bootstrap, the predictions), so
``python -m bench.mmbert_verdict`` pools the seeds' files as it pools ``bench.mmbert_cold``'s, its claim on
the held-out terms. The cloaks land in the run's folder, their speech in ``WORK/speech``.
"""
from __future__ import annotations

import time

import numpy as np

from bench.common import RESULTS, WORK, machine_info, parser, read_json, require, write_result
from bench.mmbert_evaluation import MODELS, bootstrap_drops, evaluate, half_the_drop, predictions_text, print_table
from bench.mmbert_data import DEFAULT_HOLD_OUT, heldout_cloaks, split_terms
from cloak.common.io import read_records

SETS = ("clean", "homophone", "homophone_seen")


def arguments():
    ap = parser(__doc__, out=RESULTS / "mmbert_heldout.json", work=WORK / "mmbert")
    ap.add_argument("--runs", default="runs_2000", metavar="FOLDER",
                    help="the folder in --work of the models to test (bench.mmbert_cold's runs_N[_seedS]) [runs_2000]")
    ap.add_argument("--hold-out", type=float, default=None, metavar="SHARE",
                    help="for a run trained without term masks: the share of terms held out "
                         f"[{DEFAULT_HOLD_OUT}; a run with --stage3-term-holdout: its own]")
    return ap


def main() -> None:
    from mmbert.folder import peek_features
    from mmbert.train import read_labelled, term_mask_targets

    args = arguments().parse_args()
    started, runs = time.time(), args.work / args.runs
    for folder, _ in MODELS.values():
        require(runs / folder / "training.json", f"python -m bench.mmbert_cold --work {args.work} ... (its models)")
    training = read_json(runs / MODELS["mmbert"][0] / "training.json")
    stage3 = training["run_config"]["train"]["stage3"]
    run_share = stage3.get("term_holdout", 0.0)
    held, seen = split_terms(term_mask_targets(read_labelled(training["train"])), run_share, args.hold_out)
    paths = heldout_cloaks(args.work / "test_clean.jsonl", runs, held, seen)
    files = {"test_clean": args.work / "test_clean.jsonl", **{f"test_{n}": paths[f"heldout_{n}"] for n in SETS[1:]}}
    results, predictions = {}, {}
    for model, (folder, _) in MODELS.items():
        features = {**peek_features(str(runs / folder)), "speech_cache": str(args.work / "speech")}
        results[model], predictions[model] = evaluate(runs / folder, files, features, SETS)
    labels = np.array([r["label"] for _, r in read_records(str(files["test_clean"]))])
    report = {
        "benchmark": "bench/mmbert_heldout.py", "runs": str(runs), "seed": training["run_config"]["train"]["seed"],
        "what": "MMBERT vs its text-only twin on the run's test posts cloaked by homophone on the terms its "
                "training never masked (homophone) and on those it masked (homophone_seen)",
        "stage3_masks": {k: stage3.get(k, 0.0) for k in ("text_mask", "term_mask", "term_holdout")},
        "held_out_masked_in_training": bool(stage3.get("term_mask") and not run_share),
        "test_cloaks": read_json(paths["heldout_cloaks"]),
        "results": results, "goal_half_the_drop": half_the_drop(results, SETS[1:]),
        "bootstrap_95": bootstrap_drops(labels, predictions, ops=SETS[1:]),
        "predictions": predictions_text(labels, predictions),
        "seconds": round(time.time() - started, 1), "machine": machine_info(("torch", "transformers")),
    }
    write_result(args.out, report)
    print_table(report)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
