"""Benchmark of the cloak attacks at scale: every op in keyword mode, 2 variants each, against
``tfidf-lr`` on all 5,323 COLD test posts, as whole commands.

Run from the repository root: ``.venv/bin/python -m bench.attacks_scale`` (about 5 minutes); writes
``bench/results/attacks_scale.json``. ``tfidf-lr`` is trained on COLD train with ``attacks train``;
then, back to back and ``--rounds`` times, ``attacks predict`` (the victim scoring the test posts) and
``attacks evaluate --attacks cloak --variants 2`` (into a fresh folder each round), each timed with
its peak resident memory (``os.wait4``). The cloak attack asks the victim about every changed variant,
so the fair comparison is per scored text: evaluate's seconds per victim query against predict's
seconds per post. The robustness figures (macro-F1 clean and under each op) come from the last run's
``summary.json``.
"""
from __future__ import annotations

import json
import shutil
import statistics
import time
from pathlib import Path

from bench.common import (BIN, RESULTS, WORK, cold_jsonl, folder, machine_info, parser, print_summary, read_json, run,
                          write_result)


def timed_rounds(victim: Path, test: Path, work: Path, rounds: int) -> list[dict]:
    """``attacks predict`` and ``attacks evaluate --attacks cloak``, back to back, ``rounds`` times."""
    timed = []
    for r in range(rounds):
        out = work / "eval"
        shutil.rmtree(out, ignore_errors=True)
        predict = run([BIN / "attacks", "predict", "--victim", victim, "--in", test, "--out", work / "scored.jsonl"])
        evaluate = run([BIN / "attacks", "evaluate", "--victim", victim, "--data", test, "--attacks", "cloak",
                        "--variants", "2", "--out", out, "-q"])
        timed.append({name: {k: v for k, v in step.items() if k != "command"}
                      for name, step in (("predict", predict), ("evaluate", evaluate))})
        print(f"round {r + 1}: predict {predict['seconds']} s {predict['peak_mb']} MB, "
              f"evaluate {evaluate['seconds']} s {evaluate['peak_mb']} MB", flush=True)
    return timed


def victim_queries(eval_dir: Path, victim: str, attacks) -> int:
    """The victim calls of every attack, from the outcomes ``attacks evaluate`` wrote."""
    queries = 0
    for name in attacks:
        with open(eval_dir / victim / (name.replace(":", "-") + ".jsonl"), encoding="utf-8") as f:
            queries += sum(json.loads(line)["queries"] for line in f)
    return queries


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "attacks_scale.json", cold=True, work=WORK / "attacks_scale")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    started = time.perf_counter()
    work = folder(args.work)
    data = {split: cold_jsonl(args.cold, split, work / f"cold_{split}.jsonl") for split in ("train", "test")}
    victim = work / "tfidf-lr"
    if not (victim / "victim.json").exists():
        run([BIN / "attacks", "train", "--model", "tfidf-lr", "--train", data["train"], "--out", victim])
    rounds = timed_rounds(victim, data["test"], work, args.rounds)

    summary = read_json(work / "eval" / "summary.json")
    entry = summary["victims"]["tfidf-lr"]
    queries = victim_queries(work / "eval", "tfidf-lr", entry["attacks"])
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
    write_result(args.out, result)
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
