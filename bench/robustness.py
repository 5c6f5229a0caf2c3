"""The robustness table: COLD detectors under every cloak op and, where they have embeddings, FGM / PGD.

Run from the repository root after ``python -m bench.victims`` (and ``--neural`` for bert / chinesebert):
``.venv/bin/python -m bench.robustness``; writes ``bench/results/robustness.json``. Resumable: the
evaluations are ``attacks evaluate`` runs into ``WORK/robustness/`` (``bench.common.WORK``, in the
repository), which resume themselves.

- Victims: the conventional ones worth their prediction time (``--conventional``, trained here on
  COLD train with ``attacks train`` and their default settings), ``bert`` / ``chinesebert`` from
  ``WORK/victims/`` when ``python -m bench.victims --neural`` has trained them, and any other
  trained torch victim named with ``--victim DIR`` (HABERTOR from ``python -m bench.habertor_cold``).
- Cloak attacks: every op in keyword mode (the lexicon's terms), 2 variants, all 5,323 COLD test posts.
- The search attack with every op, a budget of 200 queries a post, words ranked by deletion for every
  victim alike (``bench.search_importance`` compares the gradient ranking), the first ``--search-limit``
  test posts (``--neural-search-limit`` for the torch victims, which answer ~100 posts/s on one core).
- FGM and PGD (10 steps) at eps 0.1 to 2 on the torch victims, the first ``--embedding-limit`` test posts.
- The report of all three: ``attacks report`` into ``bench/results/robustness_report/``.
"""
from __future__ import annotations

import time
from pathlib import Path

from attacks.search import SearchAttack
from bench.common import (BIN, CONVENTIONAL, RESULTS, WORK, cold_jsonl, folder, kept_timings, machine_info, parser,
                          print_summary, read_json, require, run, victim_flags, victim_table, write_result)

EPS = "0.1,0.25,0.5,1,2"


def victims(args, data: dict[str, Path]) -> tuple[list[Path], list[Path]]:
    """The conventional victims (trained here where they are not yet) and the torch ones there are."""
    victims_dir = args.work / "victims"
    conventional = []
    for name in args.conventional.split(","):
        folder = victims_dir / name
        if not (folder / "victim.json").exists():
            # bench.victims trains the word vectors of the emb-* victims
            vectors = args.work / "word2vec_cold_swsr.txt"
            extra = ["--vectors", require(vectors, "python -m bench.victims")] if name.startswith("emb") else []
            run([BIN / "attacks", "train", "--model", name, "--train", data["train"], "--out", folder, *extra])
        conventional.append(folder)
    neural = [victims_dir / n for n in args.neural.split(",") if n and (victims_dir / n / "victim.json").exists()]
    for folder in args.victim:
        require(folder / "victim.json", f"attacks train ... --out {folder}")
        neural.append(folder)
    return conventional, neural


def evaluations(args, test: Path, conventional: list[Path], neural: list[Path]) -> dict[str, dict]:
    """The ``attacks evaluate`` runs, each into its folder of ``WORK/robustness``: their commands and times."""
    work = args.work / "robustness"
    search = ["--attacks", "search", "--query-budget", "200", "--importance", "deletion",
              "--max-candidates", str(args.max_candidates)]
    timings = {"cloak": run([BIN / "attacks", "evaluate", *victim_flags(conventional + neural), "--data", test,
                             "--attacks", "cloak", "--variants", "2", "--out", work / "cloak", "-q"])}
    timings["search"] = run([BIN / "attacks", "evaluate", *victim_flags(conventional), "--data", test, *search,
                             "--limit", str(args.search_limit), "--out", work / "search", "-q"])
    if neural:  # a torch victim answers ~100 posts/s on one core: its search and FGM / PGD get fewer posts
        timings["search-neural"] = run([BIN / "attacks", "evaluate", *victim_flags(neural), "--data", test, *search,
                                        "--limit", str(args.neural_search_limit), "--out", work / "search-neural",
                                        "-q"])
        timings["embedding"] = run([BIN / "attacks", "evaluate", *victim_flags(neural), "--data", test,
                                    "--attacks", "fgm,pgd", "--eps", EPS, "--limit", str(args.embedding_limit),
                                    "--out", work / "embedding", "-q"])
    return timings


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "robustness.json", cold=True, work=WORK)
    ap.add_argument("--conventional", default=CONVENTIONAL)
    ap.add_argument("--neural", default="bert,chinesebert", help="torch victims from bench.victims --neural, "
                    "where trained")
    ap.add_argument("--victim", type=Path, action="append", default=[],
                    help="another trained torch victim folder to attack like bert (e.g. a HABERTOR from "
                    "bench.habertor_cold); repeatable")
    ap.add_argument("--embedding-limit", type=int, default=300)
    ap.add_argument("--search-limit", type=int, default=1000)
    ap.add_argument("--neural-search-limit", type=int, default=300)
    ap.add_argument("--max-candidates", type=int, default=SearchAttack.max_candidates,
                    help="the search's candidates scored at each word (default: attacks evaluate's)")
    args = ap.parse_args()
    started = time.perf_counter()
    work = folder(args.work / "robustness")
    data = {split: cold_jsonl(args.cold, split, work / f"cold_{split}.jsonl") for split in ("train", "test")}
    conventional, neural = victims(args, data)
    timings = evaluations(args, data["test"], conventional, neural)
    report_dir = args.out.parent / "robustness_report"
    curve = args.out.parent / "curve_tfidf_lr"
    timings["report"] = run([BIN / "attacks", "report", *(work / k for k in timings),
                             *(x for k in timings for x in ("--label", k)),
                             *(("--curve", curve) if (curve / "curve.json").exists() else ()), "--out", report_dir])
    summaries = {k: read_json(work / k / "summary.json") for k in timings if k != "report"}
    result = {"benchmark": "bench/robustness.py", "machine": machine_info(("scikit-learn", "torch")),
              "timings": kept_timings(args.out, timings), "victims": victim_table(summaries),
              "seconds": round(time.perf_counter() - started, 1)}
    write_result(args.out, result)
    rows = []
    for victim, row in result["victims"].items():
        worst = min(row["attacks"].items(), key=lambda kv: kv[1]["macro_f1"])
        rows.append((victim, f"{row['clean_macro_f1']:.4f}", f"worst {worst[0]} {worst[1]['macro_f1']:.4f}"))
    print_summary(rows, args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
