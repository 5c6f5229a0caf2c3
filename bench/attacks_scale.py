"""Benchmark of the cloak attacks at scale: every op in keyword mode, 2 variants each, against
``tfidf-lr`` on all 5,323 COLD test posts, as whole commands.

Run from the repository root: ``.venv/bin/python bench/attacks_scale.py`` (about 5 minutes); writes
``bench/results/attacks_scale.json``. ``tfidf-lr`` is trained on COLD train with ``attacks train``;
then, back to back and ``--rounds`` times, ``attacks predict`` (the victim scoring the test posts) and
``attacks evaluate --attacks cloak --variants 2`` (into a fresh folder each round), each timed with
its peak resident memory (``os.wait4``). The cloak attack asks the victim about every changed variant,
so the fair comparison is per scored text: evaluate's seconds per victim query against predict's
seconds per post. The robustness figures (macro-F1 clean and under each op) come from the last run's
``summary.json``.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.long_posts import BIN, measure  # noqa: E402
from bench.machine import machine_info  # noqa: E402
from bench.summary import print_summary  # noqa: E402
from cloak.io import write_atomic  # noqa: E402

SHARED = REPO.parent / "shared" / "data"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cold", type=Path, default=SHARED / "cold")
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work" / "attacks_scale")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "attacks_scale.json")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    started = time.perf_counter()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    data = {}
    for split in ("train", "test"):
        data[split] = work / f"cold_{split}.jsonl"
        if not data[split].exists():
            run = measure([BIN / "cloak", "convert", "--from", "cold", "--in", args.cold / f"{split}.csv", "--out",
                           data[split]])
            assert run["exit"] == 0, run
    victim = work / "tfidf-lr"
    if not (victim / "victim.json").exists():
        run = measure([BIN / "attacks", "train", "--model", "tfidf-lr", "--train", data["train"], "--out", victim])
        assert run["exit"] == 0, run

    rounds = []
    for r in range(args.rounds):
        out = work / "eval"
        shutil.rmtree(out, ignore_errors=True)
        predict = measure([BIN / "attacks", "predict", "--victim", victim, "--in", data["test"], "--out",
                           work / "scored.jsonl"])
        evaluate = measure([BIN / "attacks", "evaluate", "--victim", victim, "--data", data["test"], "--attacks",
                            "cloak", "--variants", "2", "--out", out, "-q"])
        assert predict["exit"] == 0 and evaluate["exit"] == 0, (predict, evaluate)
        rounds.append({"predict": predict, "evaluate": evaluate})
        print(f"round {r + 1}: predict {predict['seconds']} s {predict['peak_mb']} MB, "
              f"evaluate {evaluate['seconds']} s {evaluate['peak_mb']} MB", flush=True)

    summary = json.loads((work / "eval" / "summary.json").read_text(encoding="utf-8"))
    entry = summary["victims"]["tfidf-lr"]
    queries = 0
    for name in entry["attacks"]:
        with open(work / "eval" / "tfidf-lr" / (name.replace(":", "-") + ".jsonl"), encoding="utf-8") as f:
            queries += sum(json.loads(line)["queries"] for line in f)
    posts = summary["data"]["records"]
    predict_s = statistics.median(r["predict"]["seconds"] for r in rounds)
    evaluate_s = statistics.median(r["evaluate"]["seconds"] for r in rounds)
    ops = {name: {"macro_f1": f["all"]["f1"], "drop": f["drop"]["f1"], "changed": f["changed"],
                  "success_rate": f["textattack"]["success_rate"]} for name, f in entry["attacks"].items()}
    result = {"benchmark": "bench/attacks_scale.py", "machine": machine_info(("scikit-learn", "jieba")),
              "posts": posts, "ops": len(ops), "variants": 2, "victim_queries": queries,
              "commands": {"predict": "attacks predict --victim tfidf-lr --in cold_test.jsonl --out scored.jsonl",
                           "evaluate": "attacks evaluate --victim tfidf-lr --data cold_test.jsonl --attacks cloak "
                                       "--variants 2 --out eval -q"},
              "rounds": rounds, "predict_seconds": predict_s, "evaluate_seconds": evaluate_s,
              "evaluate_peak_mb": max(r["evaluate"]["peak_mb"] for r in rounds),
              "predict_seconds_per_post": predict_s / posts, "evaluate_seconds_per_query": evaluate_s / queries,
              "clean_macro_f1": entry["clean"]["f1"], "by_op": ops, "seconds": round(time.perf_counter() - started, 1)}
    write_atomic(args.out, (json.dumps(result, indent=1, ensure_ascii=False) + "\n").encode())
    rows = [("attacks predict (5,323 posts)", f"{predict_s:.1f} s", f"{predict_s / posts * 1000:.2f} ms a post"),
            ("attacks evaluate, 13 ops x 2", f"{evaluate_s:.1f} s",
             f"{queries:,} queries, {evaluate_s / queries * 1000:.2f} ms a query, "
             f"peak {result['evaluate_peak_mb']} MB"),
            ("clean macro-F1", f"{entry['clean']['f1']:.4f}", "")]
    rows += [(name, f"{o['macro_f1']:.4f}", f"drop {o['drop']:.4f}, {o['changed']} posts changed")
             for name, o in ops.items()]
    print_summary(rows, args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
