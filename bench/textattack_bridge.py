"""TextAttack's greedy search with mmcloak's ops beside ``attacks evaluate``'s search, on the bundled COLD posts.

Run from the repository root in TextAttack's virtual environment (``make .venv-textattack/.installed``; TextAttack
0.3.11 needs transformers < 5): ``.venv-textattack/bin/python -m bench.textattack_bridge``; writes
``bench/results/textattack_bridge.json``. Needs no data set beyond the repository's samples.

- Victim: ``tfidf-lr`` trained by ``attacks train`` on ``samples/cold/cold_train_2000.jsonl``.
- Posts: the 300 of ``samples/cold/cold_test_300.jsonl``, both labels, untargeted against the gold label; a
  post the victim already gets wrong is skipped by both.
- TextAttack 0.3.11: ``Attack(UntargetedClassification(VictimModelWrapper(victim), query_budget=B),
  [RepeatModification()], OpTransformation(max_candidates=C), GreedyWordSwapWIR("delete"))``, the bridge of
  ``attacks.textattack_bridge``: every op's candidates for a word, as our search scores them.
- Ours: ``attacks evaluate --attacks search --importance deletion --query-budget B-1 --max-candidates C``: every
  op, greedy, untargeted, no stop words (its defaults), words ranked by deletion as TextAttack's here. TextAttack
  counts the original post's query, ours does not (the evaluator already has it), so ours runs with one query
  fewer and its figures add that one back.
- Figures: success rate (successes over the posts attacked) and queries a post (over the posts attacked), each
  with its 95% bootstrap interval (posts drawn with replacement); the paired difference of the success rates;
  queries a post on the posts both break; each side's seconds (the attack loop, and ours as the whole command).
"""
from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

import numpy as np

from bench.common import (BIN, REPO, RESULTS, WORK, folder, log, machine_info, parser, print_summary, records,
                          relative, run_once, share_difference, share_interval, write_result)

SAMPLES = REPO / "samples" / "cold"
TEXTATTACK_STATUS = {"SuccessfulAttackResult": "success", "FailedAttackResult": "failure",
                     "SkippedAttackResult": "skipped", "MaximizedAttackResult": "failure"}


def textattack_side(victim_dir: Path, posts: list[dict], budget: int, max_candidates: int,
                    nltk_data: Path) -> tuple[list[dict], dict]:
    """TextAttack's greedy search with the ops on every post: a result per post, and the loop's seconds."""
    os.environ["NLTK_DATA"] = str(nltk_data)  # read by TextAttack's import, just below
    from attacks import load_victim
    from attacks.textattack_bridge import OpTransformation, VictimModelWrapper, import_textattack

    textattack = import_textattack()
    from textattack.constraints.pre_transformation import RepeatModification
    from textattack.goal_functions import UntargetedClassification
    from textattack.search_methods import GreedyWordSwapWIR

    model = VictimModelWrapper(load_victim(str(victim_dir)))
    attack = textattack.Attack(UntargetedClassification(model, query_budget=budget), [RepeatModification()],
                               OpTransformation(max_candidates=max_candidates), GreedyWordSwapWIR("delete"))
    import jieba

    jieba.initialize()  # TextAttack's word splitter's dictionary, loaded before the clock as ours is
    results, started = [], time.perf_counter()
    for post in posts:
        result = attack.attack(post["text"], int(post["label"]))
        results.append({"id": post["id"], "status": TEXTATTACK_STATUS[type(result).__name__],
                        "queries": result.num_queries})
    return results, {"seconds": round(time.perf_counter() - started, 2), "victim_seconds": round(model.seconds, 2)}


def our_side(victim_dir: Path, data: Path, out: Path, budget: int, max_candidates: int, steps: dict) -> list[dict]:
    """``attacks evaluate``'s search on every post (the whole command, timed): a result per post, each counted
    as TextAttack counts (the original post's query added)."""
    run_once("attacks evaluate", out / "summary.json",
             [BIN / "attacks", "evaluate", "--victim", victim_dir, "--data", data, "--attacks", "search",
              "--importance", "deletion", "--query-budget", budget - 1, "--max-candidates", max_candidates,
              "--out", out, "-q"], steps)
    outcomes = records(next(out.glob("*/search.jsonl")))
    return [{"id": post["id"], "status": o["status"], "queries": o["queries"] + (o["status"] != "skipped")}
            for post, o in zip(records(data), outcomes)]


def mean_interval(values: list[float]) -> dict:
    """The mean of ``values`` (one a post) with its 95% bootstrap interval, posts drawn with replacement."""
    from attacks.bootstrap import interval, resamples

    v = np.asarray(values, dtype=float)
    if not len(v):
        return {"mean": None, "interval": None}
    draws = np.concatenate([v[rows].mean(1) for rows in resamples(len(v))])
    return {"mean": round(float(v.mean()), 2), "interval": [round(x, 2) for x in interval(draws)]}


def figures(results: list[dict]) -> dict:
    """Success rate and queries a post over the posts attacked (TextAttack's counts), with intervals."""
    attacked = [r for r in results if r["status"] != "skipped"]
    success = share_interval([r["status"] == "success" for r in attacked], [1] * len(attacked))
    return {"posts": len(results), "skipped": len(results) - len(attacked),
            "successes": sum(r["status"] == "success" for r in attacked),
            "success_rate": success["share"], "success_interval": success["interval"],
            "queries_per_post": mean_interval([r["queries"] for r in attacked])}


def side_by_side(theirs: list[dict], ours: list[dict]) -> dict:
    """The two on the same posts: the paired difference of success (TextAttack's less ours, over the posts
    both attack) and queries a post where both succeed."""
    both = [(t, o) for t, o in zip(theirs, ours) if t["status"] != "skipped" and o["status"] != "skipped"]
    won = [(t, o) for t, o in both if t["status"] == o["status"] == "success"]
    return {"posts_both_attack": len(both),
            "success_difference": share_difference([t["status"] == "success" for t, _ in both],
                                                   [o["status"] == "success" for _, o in both]),
            "posts_both_break": len(won),
            "queries_where_both_break": {"textattack": mean_interval([t["queries"] for t, _ in won]),
                                         "ours": mean_interval([o["queries"] for _, o in won])}}


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "textattack_bridge.json", work=WORK / "textattack_bridge")
    ap.add_argument("--train", type=Path, default=SAMPLES / "cold_train_2000.jsonl")
    ap.add_argument("--data", type=Path, default=SAMPLES / "cold_test_300.jsonl")
    ap.add_argument("--budget", type=int, default=200, help="queries a post, counted as TextAttack counts them")
    ap.add_argument("--max-candidates", type=int, default=10, help="candidates scored at each word")
    args = ap.parse_args()
    if importlib.util.find_spec("textattack") is None:  # before the minute the evaluate takes
        raise SystemExit("bench.textattack_bridge runs in TextAttack's virtual environment: make "
                         ".venv-textattack/.installed, then .venv-textattack/bin/python -m bench.textattack_bridge")
    started, steps = time.perf_counter(), {}
    work = folder(args.work)
    victim = work / "tfidf-lr"
    run_once("attacks train", victim / "victim.json", [BIN / "attacks", "train", "--model", "tfidf-lr", "--train",
                                                      args.train, "--out", victim, "-q"], steps)
    posts = records(args.data)
    ours = our_side(victim, args.data, work / "evaluate", args.budget, args.max_candidates, steps)
    log(f"TextAttack's search with the ops on {len(posts)} posts")
    from attacks.textattack_bridge import nltk_stopwords

    theirs, timing = textattack_side(victim, posts, args.budget, args.max_candidates,
                                     nltk_stopwords(work / "nltk_data"))
    write_result(work / "textattack.json", {**timing, "results": theirs})  # kept, whatever happens below
    result = {"benchmark": "bench/textattack_bridge.py",
              "machine": machine_info(("textattack", "transformers", "scikit-learn")),
              "victim": "tfidf-lr", "train": relative(args.train), "data": relative(args.data), "budget": args.budget,
              "max_candidates": args.max_candidates, "steps": steps,
              "textattack": {**figures(theirs), **timing},
              "ours": {**figures(ours), "command_seconds": steps["attacks evaluate"]["seconds"]},
              "side_by_side": side_by_side(theirs, ours),
              "results": {"textattack": theirs, "ours": ours}}
    write_result(args.out, result)
    rows = [(name, f"{f['success_rate']:.1%} {f['success_interval']}",
             f"{f['queries_per_post']['mean']} queries a post {f['queries_per_post']['interval']}")
            for name, f in (("TextAttack, mmcloak's ops", result["textattack"]), ("attacks evaluate", result["ours"]))]
    diff = result["side_by_side"]["success_difference"]
    rows.append(("difference", f"{diff['difference']:+.1%}", f"paired 95% interval {diff['interval']}"))
    print_summary(rows, args.out, time.perf_counter() - started, value_width=24)


if __name__ == "__main__":
    main()
