"""Our search attack against TextAttack's, on the same victims, posts and query budget.

Run from the repository root after ``python -m bench.robustness`` (which saves ``tfidf-lr``),
``python -m bench.victims --neural bert`` and after making TextAttack's virtual environment (``make
.venv-textattack/.installed``): ``.venv/bin/python -m bench.search_attack``; writes ``bench/results/search_attack.json``.

- Posts: per victim, the first 200 offensive COLD test posts it classifies correctly (both attacks
  get the same ones, so neither skips any).
- TextAttack 0.3.11 (``bench.textattack_search``, in its own environment): ``GreedyWordSwapWIR``
  with deletion importance and ``ChineseMorphonymCharacterSwap``, its Chinese recipe's constraints.
- Ours: ``SearchAttack(ops="similar")`` (look-alike characters, the closest to TextAttack's
  morphonyms), then with every op; each with TextAttack's stop-word constraint (``stopwords="zh"``,
  the same list) and without it (our default). The same budget: TextAttack counts the original post's query,
  ours does not (the evaluator already has it), so ours runs with one query fewer and its figures
  add that one back.
- Queries a post over all the posts, and over the posts both TextAttack and that row of ours break.
- Wall time: the attack loop over the 200 posts in each process (victim loaded, tables warm), the
  part of it spent inside the victim's ``predict_proba`` (the rest is the attack's own work), and
  each whole command as a user runs it (ours: ``attacks evaluate --ops similar --stopwords zh``); the
  two run back to back, each on one thread.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from attacks.search import SearchAttack
from attacks.textattack_bridge import nltk_stopwords
from bench.common import (BIN, REPO, RESULTS, WORK, cold_records, folder, machine_info, parser, print_summary,
                          read_json, require, write_result)
from cloak.common.io import write_atomic, write_records

TEXTATTACK = REPO / ".venv-textattack" / "bin" / "python"
# ours: (label, ops, stop words). "zh" is the list TextAttack's constraint uses (stopwords-iso's
# Chinese words, the same 794), so the *_stopwords rows search the words TextAttack searches.
VARIANTS = (("ours_similar_stopwords", "similar", "zh"), ("ours_similar", "similar", "none"),
            ("ours_all_ops_stopwords", "", "zh"), ("ours_all_ops", "", "none"))


class TimedVictim:
    """A victim whose ``predict_proba`` adds up its seconds, as TextAttack's side times its model wrapper."""

    def __init__(self, victim) -> None:
        self.victim, self.seconds = victim, 0.0

    def predict_proba(self, texts, *args, **kwargs):
        started = time.perf_counter()
        probs = self.victim.predict_proba(texts, *args, **kwargs)
        self.seconds += time.perf_counter() - started
        return probs

    def __getattr__(self, name: str):
        return getattr(self.victim, name)


def totals(results: list[dict], seconds: float, victim_seconds: float, extra_query: int = 0) -> dict:
    done = [r for r in results if r["status"] != "skipped"]
    successes = sum(r["status"] == "success" for r in done)
    return {"posts": len(results), "skipped": len(results) - len(done), "successes": successes,
            "success_rate": successes / len(done) if done else None,
            "queries_per_post": sum(r["queries"] + extra_query for r in done) / len(done) if done else None,
            "seconds": round(seconds, 2), "posts_per_second": round(len(results) / seconds, 2),
            "victim_seconds": round(victim_seconds, 2)}


def ours(victim, records: list[dict], clean, ops: str, budget: int, max_candidates: int,
         stopwords: str) -> tuple[dict, list[dict]]:
    # deletion importance, as TextAttack's GreedyWordSwapWIR here; + the original's query, as TextAttack counts
    attack = SearchAttack(ops=ops, query_budget=budget - 1, max_candidates=max_candidates, importance="deletion",
                          stopwords=stopwords)
    timed = TimedVictim(victim)
    started = time.perf_counter()
    outcomes = attack.attack(timed, records, range(len(records)), clean)
    seconds = time.perf_counter() - started
    results = [{"id": r["id"], "status": o.details["status"], "queries": o.queries, "text": o.text}
               for r, o in zip(records, outcomes)]
    return totals(results, seconds, timed.seconds, extra_query=1), results


def both_break(theirs: list[dict], mine: list[dict]) -> dict:
    """Queries a post on the posts both attacks break, each counted as TextAttack counts them (ours
    plus the original post's query): what each spends where both succeed."""
    ids = {r["id"] for r in theirs if r["status"] == "success"} & {r["id"] for r in mine if r["status"] == "success"}

    def mean_queries(results: list[dict], extra: int) -> float | None:
        picked = [r["queries"] + extra for r in results if r["id"] in ids]
        return sum(picked) / len(picked) if picked else None

    return {"posts": len(ids), "textattack_queries": mean_queries(theirs, 0), "ours_queries": mean_queries(mine, 1)}


def attack_posts(victim, test: list[dict], posts: int, data: Path) -> list[dict]:
    """The first ``posts`` offensive test posts the victim classifies correctly, written to ``data``."""
    probs = victim.predict_proba([r["text"] for r in test])
    records = [r for r, p in zip(test, probs) if p.argmax() == 1][:posts]
    write_records(str(data), records)
    return records


def textattack_figures(args, folder: Path, data: Path, out: Path, env: dict) -> tuple[dict, list[dict]]:
    """TextAttack's search in its own environment: its totals (and the whole command's seconds), its results."""
    t0 = time.perf_counter()
    subprocess.run([str(args.textattack_python), "-m", "bench.textattack_search", "--victim", str(folder),
                    "--data", str(data), "--budget", str(args.budget), "--out", str(out)],
                   check=True, env=env, cwd=REPO)
    command_seconds = time.perf_counter() - t0
    theirs = read_json(out)
    return ({**totals(theirs["results"], theirs["seconds"], theirs["victim_seconds"]),
             "command_seconds": round(command_seconds, 1)}, theirs["results"])


def our_command_seconds(args, folder: Path, data: Path, evaluate_dir: Path, env: dict) -> float:
    """Our closest row as the whole command a user runs (``attacks evaluate --ops similar --stopwords zh``)."""
    shutil.rmtree(evaluate_dir, ignore_errors=True)
    t0 = time.perf_counter()
    subprocess.run([str(BIN / "attacks"), "evaluate", "--victim", str(folder), "--data",
                    str(data), "--attacks", "search", "--ops", "similar", "--query-budget", str(args.budget - 1),
                    "--max-candidates", str(args.max_candidates), "--importance", "deletion",
                    "--stopwords", "zh", "--out", str(evaluate_dir), "-q"],
                   check=True, env=env, stderr=subprocess.DEVNULL)
    return round(time.perf_counter() - t0, 1)


def compare(args, name: str, test: list[dict], work: Path, env: dict) -> dict:
    """One victim's entry: TextAttack's figures, each row of ours beside them, and the speed-ups."""
    from attacks import load_victim

    folder = args.victims_dir / name
    victim = load_victim(str(folder))
    data = work / f"{name}_posts.jsonl"
    records = attack_posts(victim, test, args.posts, data)
    entry = {"max_candidates": args.max_candidates}
    clean = victim.predict_proba([r["text"] for r in records])  # what the evaluator has before it attacks
    entry["textattack"], theirs = textattack_figures(args, folder, data, work / f"{name}_textattack.json", env)
    for label, ops, stopwords in VARIANTS:
        figures, results = ours(victim, records, clean, ops, args.budget, args.max_candidates, stopwords)
        entry[label] = {**figures, "both_break": both_break(theirs, results)}
        write_atomic(work / f"{name}_{label}.json", json.dumps(results, ensure_ascii=False).encode())
    entry["ours_similar_stopwords"]["command_seconds"] = our_command_seconds(args, folder, data,
                                                                             work / f"{name}_evaluate", env)
    mine, peer = entry["ours_similar_stopwords"], entry["textattack"]
    entry["speedup_similar"] = round(peer["seconds"] / mine["seconds"], 1)
    entry["speedup_similar_commands"] = round(peer["command_seconds"] / mine["command_seconds"], 1)
    # the attack's own work: its loop without the victim's calls, which both make alike
    entry["speedup_similar_own_work"] = round((peer["seconds"] - peer["victim_seconds"])
                                              / (mine["seconds"] - mine["victim_seconds"]), 1)
    return entry


def summary_rows(name: str, entry: dict) -> list[tuple[str, str, str]]:
    rows = []
    for label in ("textattack", *(v[0] for v in VARIANTS)):
        f = entry[label]
        rows.append((f"{name} {label}", f"{f['success_rate']:.1%}",
                     f"{f['queries_per_post']:.1f} queries a post, {f['seconds']:.1f} s "
                     f"({f['victim_seconds']:.1f} s in the victim)"))
    rows.append((f"{name} speed-up (similar)", f"{entry['speedup_similar']}x",
                 f"whole commands {entry['speedup_similar_commands']}x, "
                 f"the attack's own work {entry['speedup_similar_own_work']}x"))
    return rows


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "search_attack.json", cold=True)
    ap.add_argument("--victims", default="tfidf-lr,bert")
    ap.add_argument("--victims-dir", type=Path, default=WORK / "victims")
    ap.add_argument("--textattack-python", type=Path, default=TEXTATTACK)
    ap.add_argument("--posts", type=int, default=200)
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--max-candidates", type=int, default=SearchAttack.max_candidates,
                    help="our search's candidates scored at each word")
    args = ap.parse_args()
    started = time.perf_counter()
    names = args.victims.split(",")
    for name in names:
        require(args.victims_dir / name / "victim.json", "python -m bench.robustness" if name == "tfidf-lr"
                else f"python -m bench.victims --neural {name}")
    require(args.textattack_python, "make .venv-textattack/.installed")
    import torch

    torch.set_num_threads(1)  # as TextAttack's process (OMP_NUM_THREADS=1) and our whole command
    work = folder(WORK / "search_attack")
    env = {**os.environ, "NLTK_DATA": str(nltk_stopwords(work / "nltk_data")), "OMP_NUM_THREADS": "1"}
    test = [r for r in cold_records(args.cold, "test") if r["label"] == 1]
    result = read_json(args.out, {"victims": {}})
    result.update(benchmark="bench/search_attack.py", machine=machine_info(("torch", "scikit-learn")),
                  budget=args.budget)  # a victim's entry is replaced when it is run again
    rows = []
    for name in names:
        result["victims"][name] = compare(args, name, test, work, env)
        write_result(args.out, result)
        rows += summary_rows(name, result["victims"][name])
    print_summary(rows, args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
