"""How much of COLD the cloak attacks reach, and how hard they hit, by what they cloak and how much of it.

Run from the repository root: ``.venv/bin/python bench/realism.py`` (about 40 minutes on 2 cores; the
evaluations resume); writes ``bench/results/realism.json``.

Checked against real cloaked posts kept outside this repository, the attacks ranked detectors right but
took 2.8x too little accuracy (5x for a detector trained on our cloaks): the lexicon reached half of
the toxic posts, posters cloak whole terms, and an augmented detector was attacked by its own generator.
This measures the levers on COLD:

- targets: the lexicon's terms, the terms mined from the attacked posts (``cloak mine-terms``: weighted
  log-odds, Monroe et al. 2008), or both;
- strength: each op's own share of a term (``op``, what the attacks did before), every character of
  the term (``whole``), and that with a fifth of the homophones among rarer same-sound characters
  (``poster``, the evaluator's default);
- victims: the conventional detectors of ``bench/robustness.py`` but emb-gbt, whose word vectors
  ``bench/victims.py`` trains (COLD train, default settings), and
  tfidf-lr trained on COLD train plus a cloaked copy by every op (``cloak perturb``'s defaults), whose
  attacks by those ops are seen in training (``--seen``: bench/seen_in_training.py measures by how much
  that flatters it).

For every setting: the share of all posts and of the offensive posts the attacks changed (coverage),
and per victim the drop in macro-F1 and accuracy over all posts and over the posts changed, each op of
``cloak ops`` one attack (every op in keyword mode, one variant, all 5,323 COLD test posts).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.long_posts import BIN  # noqa: E402
from bench.machine import machine_info  # noqa: E402
from bench.robustness import run  # noqa: E402
from bench.summary import print_summary  # noqa: E402
from cloak import available_ops  # noqa: E402
from cloak.io import write_atomic  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
CONVENTIONAL = "tfidf-lr,tfidf-svm,tfidf-nb,tfidf-gbt,bow-lr,bow-gbt"
TARGETS = ("lexicon", "mined", "lexicon+mined")
STRENGTHS = ("op", "whole", "poster")


def prepare(cold: Path, work: Path, names: list[str]) -> tuple[dict[str, Path], list[Path]]:
    """COLD train and test as records, the conventional victims and the augmented tfidf-lr (trained once)."""
    data = {}
    for split in ("train", "test"):
        data[split] = work / f"cold_{split}.jsonl"
        if not data[split].exists():
            run([BIN / "cloak", "convert", "--from", "cold", "--in", cold / f"{split}.csv", "--out", data[split]])
    victims = []
    for name in names:
        folder = work / "victims" / name
        if not (folder / "victim.json").exists():
            run([BIN / "attacks", "train", "--model", name, "--train", data["train"], "--out", folder])
        victims.append(folder)
    augmented = work / "victims" / "tfidf-lr+cloaks"
    if not (augmented / "victim.json").exists():
        cloaked, both = work / "cold_train_cloaked.jsonl", work / "cold_train_augmented.jsonl"
        ops = ",".join(sorted(available_ops()))
        run([BIN / "cloak", "perturb", "--in", data["train"], "--out", cloaked, "--ops", ops, "--seed", "0"])
        both.write_bytes(data["train"].read_bytes() + cloaked.read_bytes())
        run([BIN / "attacks", "train", "--model", "tfidf-lr", "--train", both, "--out", augmented])
    return data, [*victims, augmented]


def setting_figures(summary: dict) -> dict:
    """One setting's figures: per victim and attack the drop (over all posts, over the posts changed) and
    the coverage; and the means over the attacks applied to at least 5% of the posts."""
    victims = {}
    for victim, entry in summary["victims"].items():
        attacks = {}
        for attack, f in entry["attacks"].items():
            changed = f.get("on_changed") or {}
            attacks[attack.removeprefix("cloak:")] = {
                "drop_f1": f["drop"]["f1"], "drop_f1_interval": f["drop_interval"]["f1"],
                "drop_accuracy": f["drop"]["accuracy"],
                "drop_f1_changed": changed.get("drop", {}).get("f1"),
                "drop_accuracy_changed": changed.get("drop", {}).get("accuracy"),
                "coverage": f["coverage"], "barely_applied": f["barely_applied"]}
        applied = [a for a in attacks.values() if not a["barely_applied"]]
        victims[victim] = {"clean_f1": entry["clean"]["f1"], "clean_accuracy": entry["clean"]["accuracy"],
                           "attacks": attacks, "mean_drop_f1": _mean(a["drop_f1"] for a in applied),
                           "mean_drop_accuracy": _mean(a["drop_accuracy"] for a in applied),
                           "mean_drop_accuracy_changed": _mean(a["drop_accuracy_changed"] for a in applied)}
    first = next(iter(victims.values()))["attacks"].values()
    return {"coverage_posts": _mean(a["coverage"]["share"] for a in first if not a["barely_applied"]),
            "coverage_offensive": _mean(a["coverage"]["offensive_share"] for a in first if not a["barely_applied"]),
            "targets": next(iter(summary["attacks"].values())), "victims": victims}


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return round(sum(values) / len(values), 4) if values else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cold", type=Path, default=SHARED / "cold")
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work" / "realism")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "realism.json")
    ap.add_argument("--conventional", default=CONVENTIONAL, help="the conventional victims (comma-separated)")
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--strengths", default=",".join(STRENGTHS))
    args = ap.parse_args()
    started = time.perf_counter()
    args.work.mkdir(parents=True, exist_ok=True)
    data, victims = prepare(args.cold, args.work, args.conventional.split(","))
    result = json.loads(args.out.read_text()) if args.out.exists() else {}
    result.update({"benchmark": "bench/realism.py", "machine": machine_info(("scikit-learn",)),
                   "victims": [v.name for v in victims], "augmented": "tfidf-lr+cloaks"})
    settings = result.setdefault("settings", {})
    for targets in args.targets.split(","):
        for strength in args.strengths.split(","):
            out = args.work / f"eval-{targets}-{strength}"
            timing = run([BIN / "attacks", "evaluate", *(x for v in victims for x in ("--victim", v)), "--data",
                          data["test"], "--attacks", "cloak", "--targets", targets, "--strength", strength,
                          "--out", out, "-q"])
            summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
            settings[f"{targets}/{strength}"] = {"command": timing["command"], "seconds": timing["seconds"],
                                                 **setting_figures(summary)}
            write_atomic(args.out, (json.dumps(result, indent=1, ensure_ascii=False) + "\n").encode())
    result["seconds"] = round(time.perf_counter() - started, 1)
    write_atomic(args.out, (json.dumps(result, indent=1, ensure_ascii=False) + "\n").encode())
    rows = []
    for name, s in settings.items():
        plain = [v["mean_drop_accuracy"] for k, v in s["victims"].items() if k != "tfidf-lr+cloaks"]
        rows.append((name, f"reach {s['coverage_offensive']:.0%} of offensive",
                     f"accuracy drop {_mean(plain):.3f} plain, {s['victims']['tfidf-lr+cloaks']['mean_drop_accuracy']:.3f}"
                     " augmented"))
    print_summary(rows, args.out, time.perf_counter() - started, value_width=24)


if __name__ == "__main__":
    main()
