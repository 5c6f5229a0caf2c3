"""The search attack under one of its settings at several values, as whole commands on COLD.

Run from the repository root after ``python -m bench.robustness`` (its COLD test file and the
conventional victims) and ``python -m bench.victims --neural`` (``bert``)::

    .venv/bin/python -m bench.search_settings                          # --max-candidates 30, 15, 10
    .venv/bin/python -m bench.search_settings --option stopwords       # --stopwords none, zh
    .venv/bin/python -m bench.search_settings --option search-method   # greedy, beam:width=2, beam:width=4
    .venv/bin/python -m bench.search_settings --option goal            # untargeted, targeted:label=1

writing ``bench/results/search_candidates.json``, ``search_stopwords.json``, ``search_methods.json`` and
``search_goals.json``.

- ``max-candidates``: with every op a word has many candidates (a median of 93 on COLD test), and the
  search scores up to ``--max-candidates`` of them at each word, the ops taking turns, so the cap
  decides how many words a query budget reaches.
- ``stopwords``: ``zh`` leaves stopwords-iso's Chinese function words (的, 了, 我们, ...) out of the
  ranking and the substitutions, as TextAttack's Chinese recipe does: fewer deletion queries, fewer
  words to cloak.
- ``search-method``: the greedy search against a beam of 2 and of 4 texts, on the same budget (a beam
  spends its width in queries at every word, so it reaches fewer words).
- ``goal``: untargeted against ``targeted:label=1``, the false-positive attack (benign posts edited until
  the detector flags them; every offensive post is skipped).

The same command for each value, differing only in that option::

    attacks evaluate --victim WORK/victims/tfidf-lr ... --data WORK/robustness/cold_test.jsonl \\
        --attacks search --query-budget 200 --importance deletion --limit 1000 --max-candidates 10

(``WORK``: ``bench.common.WORK``, the benchmarks' working folder in the repository) on the first
``--limit`` COLD test posts for the conventional victims and ``--neural-limit`` for the torch ones
(deletion ranking for all, as ``bench.robustness``). Reported per victim and value:
success rate, accuracy under attack, queries a post, characters changed, and each command's wall time.
A rerun adds to the JSON: the (victim, value) pairs it measures replace their old figures, others stay
(all of a victim's, when it scores differently clean: it was retrained).
"""
from __future__ import annotations

import time
from pathlib import Path

from bench.common import (BIN, CONVENTIONAL, RESULTS, WORK, cold_test, machine_info, parser, print_summary,
                          read_json, require, run, search_figures, victim_flags, write_result)

# option -> (the values compared by default, the results file)
OPTIONS = {"max-candidates": ("30,15,10", "search_candidates.json"), "stopwords": ("none,zh", "search_stopwords.json"),
           "search-method": ("greedy,beam:width=2,beam:width=4", "search_methods.json"),
           "goal": ("untargeted,targeted:label=1", "search_goals.json")}


def victim_groups(args) -> list[tuple[str, list[Path], int]]:
    """(group, victim folders, posts) for the conventional victims and the torch ones. A name is a victim
    of ``WORK/victims``; a path, any victim folder (HABERTOR's benchmark keeps its own)."""
    groups = [(g, [Path(n) if "/" in n else args.work / "victims" / n for n in names.split(",") if n], limit)
              for g, names, limit in (("conventional", args.conventional, args.limit),
                                      ("neural", args.neural, args.neural_limit))]
    for group, folders, _ in groups:
        for folder in folders:
            require(folder / "victim.json", "python -m bench.robustness" if group == "conventional"
                    else "python -m bench.victims --neural " + folder.name)
    return groups


def measure_value(args, value: str, groups, data: Path, runs: dict, table: dict) -> None:
    """The search with ``--OPTION VALUE`` on each group of victims; its figures into ``table``."""
    for group, folders, limit in groups:
        if not folders:
            continue
        names = [f.name for f in folders]
        # one folder per victim set: evaluate resumes a folder, so other victims must not share it
        out = args.work / f"search_{args.option}" / f"{group}-{'+'.join(names)}-{value}"
        command = [BIN / "attacks", "evaluate", *victim_flags(folders), "--data", data,
                   "--attacks", "search", "--query-budget", str(args.budget), "--importance", "deletion",
                   "--limit", str(limit), f"--{args.option}", value, "--out", out, "-q"]
        runs[f"{','.join(names)} {value}"] = run(command)
        for victim, (clean, figures) in search_figures(out).items():
            row = table.get(victim)
            if row is None or (row["posts"], row["clean_macro_f1"]) != (limit, clean):
                # a retrained victim (or other posts): its old figures are another model's, so they go
                row = table[victim] = {"posts": limit, "clean_macro_f1": clean, "values": {}}
            row["values"][value] = figures


def main() -> None:
    ap = parser(__doc__, work=WORK)
    ap.add_argument("--option", choices=sorted(OPTIONS), default="max-candidates")
    ap.add_argument("--values", default=None, help="the values of --option to compare (default: see the docstring)")
    ap.add_argument("--out", type=Path, default=None, help="default: bench/results/ + the option's file")
    ap.add_argument("--conventional", default=CONVENTIONAL)
    ap.add_argument("--neural", default="bert", help="comma-separated victim names or folders")
    ap.add_argument("--limit", type=int, default=1000)
    ap.add_argument("--neural-limit", type=int, default=300)
    ap.add_argument("--budget", type=int, default=200)
    args = ap.parse_args()
    started = time.perf_counter()
    default_values, file_name = OPTIONS[args.option]
    out_path = args.out or RESULTS / file_name
    data = cold_test(args.work)
    groups = victim_groups(args)
    # a rerun adds to the figures already there: a (victim, value) measured again replaces its old figures
    old = read_json(out_path, {})
    runs, table = old.get("runs", {}), old.get("victims", {})
    for value in (args.values or default_values).split(","):
        measure_value(args, value, groups, data, runs, table)
    result = {"benchmark": "bench/search_settings.py", "option": args.option,
              "machine": machine_info(("scikit-learn", "torch")), "query_budget": args.budget, "runs": runs,
              "victims": table, "seconds": round(time.perf_counter() - started, 1)}
    write_result(out_path, result)
    rows = [(f"{victim} {args.option} {value}", f"{figures['success_rate']:.1%} success",
             f"{figures['queries_per_example']:.1f} queries")
            for victim, row in table.items() for value, figures in row["values"].items()]
    print_summary(rows, out_path, time.perf_counter() - started)


if __name__ == "__main__":
    main()
