"""The robustness table: COLD detectors under every cloak op and, where they have embeddings, FGM / PGD.

Run from the repository root after ``bench/victims.py`` (and ``--neural`` for bert / chinesebert):
``.venv/bin/python bench/robustness.py``; writes ``bench/results/robustness.json``. Resumable: the
evaluations are ``attacks evaluate`` runs into ``bench/work/robustness/``, which resume themselves.

- Victims: the conventional ones worth their prediction time (``--conventional``, trained here on
  COLD train with ``attacks train`` and their default settings), ``bert`` / ``chinesebert`` from
  ``bench/work/victims/`` when ``bench/victims.py --neural`` has trained them, and any other trained
  torch victim named with ``--victim DIR`` (HABERTOR from ``bench/habertor_cold.py``).
- Cloak attacks: every op in keyword mode (the lexicon's terms), 2 variants, all 5,323 COLD test posts.
- The search attack with every op, a budget of 200 queries a post, words ranked by deletion for every
  victim alike (``bench/search_importance.py`` compares the gradient ranking), the first ``--search-limit`` test posts
  (``--neural-search-limit`` for the torch victims, which answer ~100 posts/s on one core).
- FGM and PGD (10 steps) at eps 0.1 to 2 on the torch victims, the first ``--embedding-limit`` test posts.
- The report of all three: ``attacks report`` into ``bench/results/robustness_report/``.
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
from bench.long_posts import BIN, measure  # noqa: E402
from bench.machine import machine_info  # noqa: E402
from bench.summary import print_summary  # noqa: E402
from cloak.io import write_atomic  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
EPS = "0.1,0.25,0.5,1,2"


def cold_test(work: Path) -> Path:
    """The COLD test records this benchmark converts, which the search benchmarks attack too."""
    data = work / "robustness" / "cold_test.jsonl"
    if not data.exists():
        raise SystemExit(f"{data}: run bench/robustness.py first (it converts COLD test)")
    return data


def run(args: list) -> dict:
    command = " ".join(str(a).replace(str(REPO) + "/", "") for a in args)
    print(command, flush=True)
    result = measure(args)
    if result["exit"] != 0:
        raise SystemExit(f"failed: {result['stderr']}")
    return {"command": command, **result}


def search_figures(out: Path) -> dict[str, tuple[float, dict]]:
    """Per victim of an ``attacks evaluate --attacks search`` folder: clean macro-F1 and the search's
    figures (macro-F1 under attack, characters changed and TextAttack's counts, also by gold label)."""
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return {victim: (entry["clean"]["f1"], {"macro_f1": (f := entry["attacks"]["search"])["all"]["f1"],
                                            "perturbed_share": f["perturbed_share"], **f["textattack"],
                                            "by_label": f["textattack_by_label"]})
            for victim, entry in summary["victims"].items()}


def victim_table(summaries: dict[str, dict]) -> dict[str, dict]:
    """Per victim of ``attacks evaluate`` summaries: clean macro-F1 and, per attack, macro-F1 under it and
    TextAttack's success rate."""
    table: dict[str, dict] = {}
    for summary in summaries.values():
        for victim, entry in summary["victims"].items():
            row = table.setdefault(victim, {"clean_macro_f1": entry["clean"]["f1"], "attacks": {}})
            for attack, figures in entry["attacks"].items():
                if "skipped" not in figures:
                    row["attacks"][attack] = {"macro_f1": figures["all"]["f1"], "clean_macro_f1": entry["clean"]["f1"],
                                              "success_rate": figures["textattack"]["success_rate"],
                                              "posts": summary["data"]["records"]}
    return table


def kept_timings(out: Path, timings: dict[str, dict]) -> dict[str, list[dict]]:
    """This run's timings after those already in ``out``: a rerun that adds a victim resumes the others and
    times only the new one, so the first run's figures must not be lost."""
    history = json.loads(out.read_text(encoding="utf-8")).get("timings", {}) if out.exists() else {}
    runs = {k: (v if isinstance(v, list) else [v]) for k, v in history.items()}
    for k, v in timings.items():
        runs.setdefault(k, []).append(v)
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cold", type=Path, default=SHARED / "cold")
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "robustness.json")
    ap.add_argument("--conventional", default="tfidf-lr,tfidf-svm,tfidf-nb,tfidf-gbt,bow-lr,bow-gbt,emb-gbt")
    ap.add_argument("--neural", default="bert,chinesebert", help="torch victims from bench/victims.py --neural, "
                    "where trained")
    ap.add_argument("--victim", type=Path, action="append", default=[],
                    help="another trained torch victim folder to attack like bert (e.g. a HABERTOR from "
                    "bench/habertor_cold.py); repeatable")
    ap.add_argument("--embedding-limit", type=int, default=300)
    ap.add_argument("--search-limit", type=int, default=1000)
    ap.add_argument("--neural-search-limit", type=int, default=300)
    ap.add_argument("--max-candidates", type=int, default=SearchAttack.max_candidates,
                    help="the search's candidates scored at each word (default: attacks evaluate's)")
    args = ap.parse_args()
    started = time.perf_counter()
    work, victims_dir = args.work / "robustness", args.work / "victims"
    work.mkdir(parents=True, exist_ok=True)
    data = {}
    for split in ("train", "test"):
        data[split] = work / f"cold_{split}.jsonl"
        if not data[split].exists():
            run([BIN / "cloak", "convert", "--from", "cold", "--in", args.cold / f"{split}.csv", "--out", data[split]])
    victims = []
    for name in args.conventional.split(","):
        folder = victims_dir / name
        if not (folder / "victim.json").exists():
            extra = ["--vectors", args.work / "word2vec_cold_swsr.txt"] if name.startswith("emb") else []
            run([BIN / "attacks", "train", "--model", name, "--train", data["train"], "--out", folder, *extra])
        victims.append(folder)
    conventional = list(victims)
    neural = [victims_dir / n for n in args.neural.split(",") if n and (victims_dir / n / "victim.json").exists()]
    for folder in args.victim:
        if not (folder / "victim.json").exists():
            raise SystemExit(f"--victim {folder}: no victim.json there (train it first)")
        neural.append(folder)
    victims += neural

    def victim_flags(folders):
        return [x for f in folders for x in ("--victim", f)]

    timings = {"cloak": run([BIN / "attacks", "evaluate", *victim_flags(victims), "--data", data["test"],
                             "--attacks", "cloak", "--variants", "2", "--out", work / "cloak", "-q"])}
    timings["search"] = run([BIN / "attacks", "evaluate", *victim_flags(conventional), "--data", data["test"],
                             "--attacks", "search", "--query-budget", "200", "--importance", "deletion",
                             "--max-candidates", str(args.max_candidates),
                             "--limit", str(args.search_limit),
                             "--out", work / "search", "-q"])
    if neural:  # a torch victim answers ~100 posts/s on one core: its search and FGM / PGD get fewer posts
        timings["search-neural"] = run([BIN / "attacks", "evaluate", *victim_flags(neural), "--data", data["test"],
                                        "--attacks", "search", "--query-budget", "200", "--importance", "deletion",
                                        "--max-candidates", str(args.max_candidates),
                                        "--limit", str(args.neural_search_limit), "--out", work / "search-neural",
                                        "-q"])
        timings["embedding"] = run([BIN / "attacks", "evaluate", *victim_flags(neural), "--data", data["test"],
                                    "--attacks", "fgm,pgd", "--eps", EPS, "--limit", str(args.embedding_limit),
                                    "--out", work / "embedding", "-q"])
    report_dir = args.out.parent / "robustness_report"
    curve = args.out.parent / "curve_tfidf_lr"
    timings["report"] = run([BIN / "attacks", "report", *(work / k for k in timings),
                             *(x for k in timings for x in ("--label", k)),
                             *(("--curve", curve) if (curve / "curve.json").exists() else ()), "--out", report_dir])
    summaries = {k: json.loads((work / k / "summary.json").read_text(encoding="utf-8")) for k in timings
                 if k != "report"}
    result = {"benchmark": "bench/robustness.py", "machine": machine_info(("scikit-learn", "torch")),
              "timings": kept_timings(args.out, timings), "victims": victim_table(summaries),
              "seconds": round(time.perf_counter() - started, 1)}
    write_atomic(args.out, (json.dumps(result, indent=1, ensure_ascii=False) + "\n").encode())
    rows = []
    for victim, row in result["victims"].items():
        worst = min(row["attacks"].items(), key=lambda kv: kv[1]["macro_f1"])
        rows.append((victim, f"{row['clean_macro_f1']:.4f}", f"worst {worst[0]} {worst[1]['macro_f1']:.4f}"))
    print_summary(rows, args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
