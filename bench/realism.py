"""How much of COLD the cloak attacks reach, and how hard they hit, by what they cloak and how much of it.

Run from the repository root after ``python -m bench.victims`` (whose word vectors emb-gbt reads):
``.venv/bin/python -m bench.realism`` (about 40 minutes on 2 cores; the evaluations resume); writes
``bench/results/realism.json``.

Checked against real cloaked posts kept outside this repository, the attacks ranked detectors right but
took 2.8x too little accuracy (5x for a detector trained on our cloaks): the lexicon reached half of
the toxic posts, posters cloak whole terms, and an augmented detector was attacked by its own generator.
This measures the levers on COLD:

- targets: the lexicon's terms, the terms mined from the attacked posts (``cloak mine-terms``: weighted
  log-odds, Monroe et al. 2008), or both;
- strength: each op's own share of a term (``op``, what the attacks did before), every character of
  the term (``whole``), and that with a fifth of the homophones among rarer same-sound characters
  (``poster``, the evaluator's default);
- victims: every conventional detector of ``bench.robustness`` (COLD train, default settings; emb-gbt on the
  word vectors ``bench.victims`` trains), and
  tfidf-lr trained on COLD train plus a cloaked copy by every op (``cloak perturb``'s defaults), whose
  attacks by those ops are seen in training (``bench.seen_in_training`` measures by how much
  that flatters it).

For every setting: the share of all posts and of the offensive posts the attacks changed (coverage),
and per victim the drop in macro-F1 and accuracy over all posts and over the posts changed, each op of
``cloak ops`` one attack (every op in keyword mode, one variant, all 5,323 COLD test posts).
"""
from __future__ import annotations

import time
from pathlib import Path

from bench.common import (BIN, CONVENTIONAL, RESULTS, WORK, cold_jsonl, folder, machine_info, parser, print_summary,
                          read_json, require, run, victim_flags, write_result)
from cloak import available_ops

TARGETS = ("lexicon", "mined", "lexicon+mined")
STRENGTHS = ("op", "whole", "poster")


def prepare(cold: Path, work: Path, names: list[str]) -> tuple[dict[str, Path], list[Path]]:
    """COLD train and test as records, the conventional victims and the augmented tfidf-lr (trained once)."""
    data = {split: cold_jsonl(cold, split, work / f"cold_{split}.jsonl") for split in ("train", "test")}
    victims = []
    for name in names:
        folder = work / "victims" / name
        if not (folder / "victim.json").exists():
            # the emb-* victims read the word vectors bench.victims trains (COLD train and SWSR)
            vectors = WORK / "word2vec_cold_swsr.txt"
            extra = ["--vectors", require(vectors, "python -m bench.victims --only emb-gbt --no-curve")] \
                if name.startswith("emb") else []
            run([BIN / "attacks", "train", "--model", name, "--train", data["train"], "--out", folder, *extra])
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


def summary_rows(settings: dict[str, dict]) -> list[tuple[str, str, str]]:
    rows = []
    for name, s in settings.items():
        plain = [v["mean_drop_accuracy"] for k, v in s["victims"].items() if k != "tfidf-lr+cloaks"]
        augmented = s["victims"]["tfidf-lr+cloaks"]["mean_drop_accuracy"]
        rows.append((name, f"reach {s['coverage_offensive']:.0%} of offensive",
                     f"accuracy drop {_mean(plain):.3f} plain, {augmented:.3f} augmented"))
    return rows


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "realism.json", cold=True, work=WORK / "realism")
    ap.add_argument("--conventional", default=CONVENTIONAL, help="the conventional victims (comma-separated)")
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--strengths", default=",".join(STRENGTHS))
    args = ap.parse_args()
    started = time.perf_counter()
    data, victims = prepare(args.cold, folder(args.work), args.conventional.split(","))
    result = read_json(args.out, {})
    result.update({"benchmark": "bench/realism.py", "machine": machine_info(("scikit-learn",)),
                   "victims": [v.name for v in victims], "augmented": "tfidf-lr+cloaks"})
    settings = result.setdefault("settings", {})
    for targets in args.targets.split(","):
        for strength in args.strengths.split(","):
            out = args.work / f"eval-{targets}-{strength}"
            timing = run([BIN / "attacks", "evaluate", *victim_flags(victims), "--data",
                          data["test"], "--attacks", "cloak", "--targets", targets, "--strength", strength,
                          "--out", out, "-q"])
            settings[f"{targets}/{strength}"] = {"command": timing["command"], "seconds": timing["seconds"],
                                                 **setting_figures(read_json(out / "summary.json"))}
            write_result(args.out, result)
    result["seconds"] = round(time.perf_counter() - started, 1)
    write_result(args.out, result)
    print_summary(summary_rows(settings), args.out, time.perf_counter() - started, value_width=24)


if __name__ == "__main__":
    main()
