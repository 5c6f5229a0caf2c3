"""The search attack's word ranking: deletion (a query a word) against the gradient (one pass a post).

Run from the repository root after ``bench/robustness.py`` (its COLD test file) and
``bench/victims.py --neural`` (the torch victims): ``.venv/bin/python bench/search_importance.py``;
writes ``bench/results/search_importance.json``.

The same command twice, back to back, on the same posts (the first ``--limit`` COLD test posts) and
victims (``bert`` and ``chinesebert``), every op, a budget of 200 queries a post, differing only in
``--importance``::

    attacks evaluate --victim bench/work/victims/bert --victim bench/work/victims/chinesebert \\
        --data bench/work/robustness/cold_test.jsonl --attacks search --limit 300 --importance deletion

Reported per victim and ranking: success rate, accuracy and macro-F1 under attack, queries a post,
characters changed (TextAttack's counting; the gradient pass counts as one query), and each whole
command's wall time and peak memory.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from attacks.search import SearchAttack  # noqa: E402
from bench.long_posts import BIN  # noqa: E402
from bench.machine import machine_info  # noqa: E402
from bench.robustness import cold_test, run, search_figures  # noqa: E402
from bench.summary import print_summary  # noqa: E402
from cloak.io import write_atomic  # noqa: E402

RANKINGS = ("deletion", "gradient")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "search_importance.json")
    ap.add_argument("--victims", default="bert,chinesebert")
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--max-candidates", type=int, default=SearchAttack.max_candidates)
    args = ap.parse_args()
    started = time.perf_counter()
    data = cold_test(args.work)
    victims = [args.work / "victims" / n for n in args.victims.split(",")]
    for folder in victims:
        if not (folder / "victim.json").exists():
            raise SystemExit(f"{folder}: run bench/victims.py --neural first")
    runs, table = {}, {}
    for ranking in RANKINGS:
        out = args.work / "search_importance" / ranking
        command = [BIN / "attacks", "evaluate", *(x for f in victims for x in ("--victim", f)), "--data", data,
                   "--attacks", "search", "--query-budget", str(args.budget), "--limit", str(args.limit),
                   "--max-candidates", str(args.max_candidates),
                   "--importance", ranking, "--out", out, "-q"]
        runs[ranking] = run(command)
        for victim, (clean, figures) in search_figures(out).items():
            table.setdefault(victim, {"clean_macro_f1": clean})[ranking] = figures
    result = {"benchmark": "bench/search_importance.py", "machine": machine_info(("torch",)),
              "posts": args.limit, "query_budget": args.budget, "max_candidates": args.max_candidates, "runs": runs,
              "victims": table, "seconds": round(time.perf_counter() - started, 1)}
    write_atomic(args.out, (json.dumps(result, indent=1, ensure_ascii=False) + "\n").encode())
    rows = [(f"{victim} {ranking}", f"{row[ranking]['success_rate']:.1%} success",
             f"{row[ranking]['queries_per_example']:.1f} queries")
            for victim, row in table.items() for ranking in RANKINGS]
    print_summary(rows, args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
