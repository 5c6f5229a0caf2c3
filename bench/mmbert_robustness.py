"""MMBERT in the robustness table: the models of ``bench.mmbert_cold`` attacked like every other victim.

Run from the repository root after ``python -m bench.mmbert_cold`` (its ``--work``) and
``python -m bench.robustness`` (the conventional victims)::

    .venv/bin/python -m bench.mmbert_robustness   # --work: bench.mmbert_cold's, the eSpeak NG run's by default

writes ``bench/results/mmbert_robustness.json``. Resumable: the evaluations are ``attacks evaluate``
runs into ``WORK/robustness/``, which resume themselves.

- Victims: MMBERT after stage 3 (``mmbert``) and its text-only twin (``mmbert-text-only``: the same
  backbone, one modality, the same stage-3 settings) from ``WORK/runs_2000`` (``--runs``), both trained on 2,000 COLD
  posts and their cloaks; and, for scale, the conventional victims of ``bench.robustness``
  (``--conventional``; trained on all of COLD train, without cloaks).
- Data: ``WORK/test_clean.jsonl``, the 300 COLD test posts (8-32 characters) MMBERT was measured on.
- Attacks: every cloak op in keyword mode, 2 variants; FGM at eps 0.1 to 1 on the two torch victims;
  the search (every op, 200 queries a post, deletion ranking; ``--search-limit`` for fewer posts).
  Every cloaked text MMBERT reads is spoken (the run's own backend, eSpeak NG for ``mmbert-espeak``)
  and heard by Whisper, so the cloak and search attacks cost mostly speech (here: the cloak attacks of
  all nine victims 12 min the first time, 77 s once spoken; the search 13 min).
- The report of all three, with the run's routing figure: ``attacks report`` into
  ``bench/results/mmbert_robustness_report/``.

Another training seed of the pair (``python -m bench.mmbert_cold --seed 1``)::

    .venv/bin/python -m bench.mmbert_robustness --runs runs_2000_seed1 --conventional "" \
        --routing bench/results/mmbert_routing_espeak_seed1 --out bench/results/mmbert_robustness_seed1.json
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from attacks.search import SearchAttack
from bench.common import (BIN, CONVENTIONAL, RESULTS, WORK, kept_timings, machine_info, parser, print_summary,
                          read_json, relative, require, run, victim_flags, victim_table, write_result)

TORCH_VICTIMS = {"mmbert": "mmbert_stage3", "mmbert-text-only": "text_only"}
EPS = "0.1,0.25,0.5,1"
RUNS = "runs_2000"  # bench.mmbert_cold's runs at its default --train and seed


def link_victims(work: Path, runs: str) -> list[Path]:
    """``WORK/victims/NAME`` (another ``runs``: ``WORK/victims-RUNS/NAME``) -> the run folder, so the
    outcomes are named by what the model is."""
    folder = work / ("victims" if runs == RUNS else f"victims-{runs}")
    folder.mkdir(exist_ok=True)
    links = []
    for name, run_name in TORCH_VICTIMS.items():
        target = work / runs / run_name
        require(target / "model.safetensors", f"python -m bench.mmbert_cold --work {relative(work)}")
        link = folder / name
        if not link.exists():
            os.symlink(os.path.relpath(target, folder), link)
        links.append(link)
    return links


def with_drops(table: dict[str, dict]) -> dict[str, dict]:
    """``victim_table`` with each attack's drop from clean, and per victim the mean and worst over the cloak ops."""
    for row in table.values():
        for figures in row["attacks"].values():
            figures["drop"] = row["clean_macro_f1"] - figures["macro_f1"]
        cloaks = {a: f["drop"] for a, f in row["attacks"].items() if a.startswith("cloak:")}
        if cloaks:
            row["mean_cloak_drop"] = sum(cloaks.values()) / len(cloaks)
            row["worst_cloak"] = max(cloaks, key=cloaks.get)
    return table


def evaluations(args, out: Path, torch_victims: list[Path], conventional: list[Path]) -> dict[str, dict]:
    """The ``attacks evaluate`` runs, each into its folder of ``out``: their commands and times."""
    data = args.work / "test_clean.jsonl"
    timings = {"cloak": run([BIN / "attacks", "evaluate", *victim_flags(torch_victims + conventional), "--data",
                             data, "--attacks", "cloak", "--variants", "2", "--out", out / "cloak", "-q"]),
               "embedding": run([BIN / "attacks", "evaluate", *victim_flags(torch_victims), "--data", data,
                                 "--attacks", "fgm", "--eps", EPS, "--out", out / "embedding", "-q"])}
    if args.search_limit != 0:
        limit = ["--limit", str(args.search_limit)] if args.search_limit else []
        timings["search"] = run([BIN / "attacks", "evaluate", *victim_flags(torch_victims + conventional), "--data",
                                 data, "--attacks", "search", "--query-budget", "200", "--importance", "deletion",
                                 *limit, "--out", out / "search", "-q"])
    return timings


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--work", type=Path, default=WORK / "mmbert-espeak", help="bench.mmbert_cold's --work")
    ap.add_argument("--runs", default=RUNS,
                    help="the folder of WORK holding the two models, e.g. runs_2000_seed1 for "
                         "bench.mmbert_cold --seed 1; the outcomes go to WORK/robustness-RUNS")
    ap.add_argument("--victims", type=Path, default=WORK / "victims",
                    help="the conventional victims of bench.robustness")
    ap.add_argument("--conventional", default=CONVENTIONAL)
    ap.add_argument("--search-limit", type=int, default=None,
                    help="the first N posts for the search (default: all; 0: no search)")
    ap.add_argument("--routing", type=Path, default=RESULTS / "mmbert_routing_espeak",
                    help="the run's `mmbert routing` folder, drawn in the report")
    ap.add_argument("--out", type=Path, default=RESULTS / "mmbert_robustness.json",
                    help="the figures; the report goes beside it, in OUT's name + _report")
    args = ap.parse_args()
    started = time.perf_counter()
    torch_victims = link_victims(args.work, args.runs)
    conventional = [args.victims / n for n in args.conventional.split(",") if n]
    for folder in conventional:
        require(folder / "victim.json", "python -m bench.robustness")  # it trains them
    out = args.work / ("robustness" if args.runs == RUNS else f"robustness-{args.runs}")
    timings = evaluations(args, out, torch_victims, conventional)
    attacks = list(timings)
    timings["report"] = run([BIN / "attacks", "report", *(out / k for k in attacks), *(x for k in attacks for x in
                             ("--label", k)), *(("--routing", args.routing) if (args.routing / "routing.json").exists()
                                                else ()), "--out", args.out.with_name(args.out.stem + "_report")])
    summaries = {k: read_json(out / k / "summary.json") for k in attacks}
    table = with_drops(victim_table(summaries))
    result = {"benchmark": "bench/mmbert_robustness.py", "work": relative(args.work), "runs": args.runs,
              "data": relative(args.work / "test_clean.jsonl"),
              "posts": summaries["cloak"]["data"]["records"], "search_max_candidates": SearchAttack.max_candidates,
              "machine": machine_info(("scikit-learn", "torch")), "timings": kept_timings(args.out, timings),
              "victims": table, "seconds": round(time.perf_counter() - started, 1)}
    write_result(args.out, result)
    print_summary([(v, f"{r['clean_macro_f1']:.4f}", f"mean cloak drop {r.get('mean_cloak_drop', 0):.4f}")
                   for v, r in table.items()], args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
