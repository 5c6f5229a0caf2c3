"""The search attack's word ranking: deletion (a query a word) against the gradient (one pass a post).

Run from the repository root after ``python -m bench.robustness`` (its COLD test file) and
``python -m bench.victims --neural bert,chinesebert`` (the torch victims):
``.venv/bin/python -m bench.search_importance``; writes ``bench/results/search_importance.json``.

The same command twice, back to back, on the same posts (the first ``--limit`` COLD test posts) and
victims (``bert`` and ``chinesebert``), every op, a budget of 200 queries a post, differing only in
``--importance``::

    attacks evaluate --victim WORK/victims/bert --victim WORK/victims/chinesebert \\
        --data WORK/robustness/cold_test.jsonl --attacks search --limit 300 --importance deletion

(``WORK``: ``bench.common.WORK``, the benchmarks' working folder in the repository.)

Reported per victim and ranking: success rate, accuracy and macro-F1 under attack, queries a post,
characters changed (TextAttack's counting; the gradient pass counts as one query), and each whole
command's wall time and peak memory.
"""
from __future__ import annotations

import time

from attacks.search import SearchAttack
from bench.common import (BIN, RESULTS, WORK, cold_test, machine_info, parser, print_summary, require, run,
                          search_figures, victim_flags, write_result)

RANKINGS = ("deletion", "gradient")


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "search_importance.json", work=WORK)
    ap.add_argument("--victims", default="bert,chinesebert")
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--max-candidates", type=int, default=SearchAttack.max_candidates)
    args = ap.parse_args()
    started = time.perf_counter()
    data = cold_test(args.work)
    victims = [args.work / "victims" / n for n in args.victims.split(",")]
    for folder in victims:
        require(folder / "victim.json", f"python -m bench.victims --neural {folder.name}")
    runs, table = {}, {}
    for ranking in RANKINGS:
        out = args.work / "search_importance" / ranking
        command = [BIN / "attacks", "evaluate", *victim_flags(victims), "--data", data,
                   "--attacks", "search", "--query-budget", str(args.budget), "--limit", str(args.limit),
                   "--max-candidates", str(args.max_candidates),
                   "--importance", ranking, "--out", out, "-q"]
        runs[ranking] = run(command)
        for victim, (clean, figures) in search_figures(out).items():
            table.setdefault(victim, {"clean_macro_f1": clean})[ranking] = figures
    result = {"benchmark": "bench/search_importance.py", "machine": machine_info(("torch",)),
              "posts": args.limit, "query_budget": args.budget, "max_candidates": args.max_candidates, "runs": runs,
              "victims": table, "seconds": round(time.perf_counter() - started, 1)}
    write_result(args.out, result)
    rows = [(f"{victim} {ranking}", f"{row[ranking]['success_rate']:.1%} success",
             f"{row[ranking]['queries_per_example']:.1f} queries")
            for victim, row in table.items() for ranking in RANKINGS]
    print_summary(rows, args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
