"""Where a detector looks: the small ``bert`` with no attention regulariser, with EAR, with KLAR and with
the GAttention head, on COLD.

EAR and KLAR: Bonaldi et al., "Weigh Your Own Words: Improving Hate Speech Counter Narrative Generation
via Attention Regularization", CS4OA 2023, arXiv:2309.02311. GAttention: Jarquín-Vásquez et al.,
"GAttention: Gated Attention for the Detection of Abusive Language", Findings of EMNLP 2025
(ACL Anthology 2025.findings-emnlp.1105).

Run from the repository root after ``python -m bench.backbone``: ``.venv/bin/python -m bench.regularizers``;
writes ``bench/results/regularizers.json``. Every step is the command a user runs, timed as a whole,
and is skipped when its output is there, so a rerun continues (a training stopped after a checkpoint
continues with ``attacks train --resume``). ``--backbone DIR`` takes any encoder folder instead
(multilingual-e5-small: ``--lr 2e-5 --backbone-layers 6 --max-length 64``, with its own ``--work`` and ``--out``).

- Training: ``attacks train --model bert`` from the bench's ``small`` backbone (4 layers, 256 wide), the
  small ``bert`` victim's recipe (lr 1e-4, batch 32, 128 tokens), on ``--train-size`` COLD train posts
  (a seeded sample; 10,000 by default, one epoch: four models in a session's budget) with the first
  ``--dev-size`` (1,000) COLD dev posts picking the epoch. Variants: ``none``; ``--regularizer ear`` (alpha 0.01);
  ``--regularizer klar`` (alpha 0.1, share 0.4 on the default lexicon's terms); ``--head gattention``
  (one head). All four see the same posts in the same order.
- Clean: macro-F1 on all 5,323 COLD test posts, and the false-positive rate on the non-offensive test
  posts that contain an identity term of the default lexicon (categories race, region, gender, lgbt),
  the unintended bias EAR was made to reduce.
- Attacks: ``attacks evaluate --attacks cloak --ops homophone`` (keyword mode, 2 variants) on all test
  posts, and ``--attacks search`` (every op, 200 queries, words ranked by deletion) on the first
  ``--search-limit`` test posts; each model's macro-F1 drop.
"""
from __future__ import annotations

import json
import random
import time
from pathlib import Path

from attacks.search import SearchAttack
from bench.common import (BIN, RESULTS, WORK, backbone_info, cold_records, encoder_options, epoch_seconds, folder,
                          machine_info, parser, read_json, resumable, run, victim_flags, write_result)
from cloak.common.io import write_records

VARIANTS = {"none": [], "ear": ["--regularizer", "ear"], "klar": ["--regularizer", "klar"],
            "gattention": ["--head", "gattention"]}
IDENTITY = ("race", "region", "gender", "lgbt")


def identity_fpr(clean: Path, test: list[dict]) -> dict:
    """False-positive rate on the non-offensive posts that name an identity group of the default lexicon."""
    from cloak.targets import default_lexicon

    lexicon = default_lexicon()
    chosen = {r["id"] for r in test if r["label"] == 0
              and any(lexicon.categories[r["text"][s:e]] in IDENTITY for s, e in lexicon.find(r["text"]))}
    flagged = 0
    for line in clean.read_text(encoding="utf-8").splitlines():
        outcome = json.loads(line)
        if outcome["id"] in chosen:
            flagged += outcome["probs"][1] > outcome["probs"][0]
    return {"posts": len(chosen), "false_positives": flagged, "fpr": flagged / max(1, len(chosen))}


def prepare(args, work: Path) -> tuple[dict[str, list[dict]], dict[str, Path]]:
    """The COLD records: a seeded sample of train, the first ``--dev-size`` dev and ``--test-size`` test posts."""
    rows = {s: cold_records(args.cold, s) for s in ("train", "dev", "test")}
    rows["train"] = random.Random(0).sample(rows["train"], min(args.train_size, len(rows["train"])))
    rows["dev"], rows["test"] = rows["dev"][:args.dev_size], rows["test"][:args.test_size]
    data = {s: work / f"cold_{s}.jsonl" for s in rows}
    for split, path in data.items():
        if not path.exists():
            write_records(str(path), rows[split])
    return rows, data


def train(args, work: Path, data: dict[str, Path], steps: dict) -> list[Path]:
    """Each variant of ``VARIANTS`` trained once, on the same posts in the same order; a variant whose
    training stopped after a checkpoint continues from it (``--resume``), a finished one is kept."""
    (work / "train.yaml").write_text(json.dumps({"config": {"max_length": args.max_length}, "training": {
        "epochs": args.epochs, "lr": args.lr, "batch_size": 32, "patience": 2,
        "checkpoint_minutes": args.checkpoint_minutes}}) + "\n")
    layers = ["--backbone-layers", args.backbone_layers] if args.backbone_layers else []
    victims = []
    for name, flags in VARIANTS.items():
        out = work / "victims" / f"bert-{name}"
        victims.append(out)
        if not (out / "training.json").exists():  # written last by attacks train (victim.json: each best epoch)
            run([BIN / "attacks", "train", "--model", "bert", "--backbone", args.backbone, *layers, *flags,
                 "--train", data["train"], "--dev", data["dev"], "--config", work / "train.yaml",
                 "--out", out, "-q", *(["--resume"] if resumable(out) else [])], steps, f"train {name}")
    return victims


def victim_row(folder: Path, summaries: dict[str, dict], clean_outcomes: Path, test: list[dict]) -> dict:
    """A variant's figures: clean, on the identity posts, under each attack; its training time."""
    clean = summaries["homophone"]["victims"][folder.name]["clean"]
    row = {"f1": clean["f1"], "auc": clean["auc"], "fpr_at_5_fnr": clean["fpr_at_5_fnr"],
           "identity_non_offensive": identity_fpr(clean_outcomes, test)}
    for key, summary in summaries.items():
        entry = summary["victims"][folder.name]
        figures = next(iter(entry["attacks"].values()))
        row[key] = {"posts": summary["data"]["records"], "clean_f1": entry["clean"]["f1"],
                    "attacked_f1": figures["all"]["f1"], "f1_drop": figures["drop"]["f1"],
                    "f1_drop_interval": figures["drop_interval"]["f1"], "coverage": figures["coverage"],
                    "success_rate": figures["textattack"]["success_rate"]}
    training = read_json(folder / "training.json")
    row["train_seconds"], row["dev_f1"] = training["seconds"], training["dev_figures"]["f1"]
    row["epoch_seconds"] = epoch_seconds(read_json(folder / "log.json"))  # whole epochs, across a resume
    return row


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "regularizers.json", cold=True, work=WORK)
    encoder_options(ap)
    ap.add_argument("--train-size", type=int, default=10000)
    ap.add_argument("--dev-size", type=int, default=1000, help="the first N COLD dev posts pick the epoch")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--test-size", type=int, default=None, help="the first N COLD test posts (all by default)")
    ap.add_argument("--search-limit", type=int, default=200)
    ap.add_argument("--max-candidates", type=int, default=SearchAttack.max_candidates)
    args = ap.parse_args()
    backbone = backbone_info(args.backbone, args.backbone_layers)
    started = time.perf_counter()
    work = folder(args.work / "regularizers")
    steps: dict = read_json(args.out, {}).get("steps", {})
    rows, data = prepare(args, work)
    victims = train(args, work, data, steps)
    evaluations = {"homophone": ["--attacks", "cloak", "--ops", "homophone", "--variants", "2"],
                   "search": ["--attacks", "search", "--query-budget", "200", "--importance", "deletion",
                              "--max-candidates", str(args.max_candidates), "--limit", str(args.search_limit)]}
    for key, flags in evaluations.items():
        if not (work / key / "summary.json").exists():
            run([BIN / "attacks", "evaluate", *victim_flags(victims), "--data", data["test"], *flags,
                 "--out", work / key, "-q"], steps, f"evaluate {key}")
    summaries = {k: read_json(work / k / "summary.json") for k in evaluations}
    table = {folder.name: victim_row(folder, summaries, work / "homophone" / folder.name / "clean.jsonl",
                                     rows["test"]) for folder in victims}
    result = {"benchmark": "bench/regularizers.py", "machine": machine_info(("torch", "transformers")),
              "train_posts": len(rows["train"]), "epochs": args.epochs,
              "backbone": backbone, "settings": {"lr": args.lr, "max_length": args.max_length, "batch_size": 32},
              "steps": steps, "victims": table,
              "seconds": round(time.perf_counter() - started, 1)}
    write_result(args.out, result)
    for name, row in table.items():
        print(name, f"F1 {row['f1']:.4f}", f"identity FPR {row['identity_non_offensive']['fpr']:.4f}",
              f"homophone drop {row['homophone']['f1_drop']:.4f}", f"search drop {row['search']['f1_drop']:.4f}")


if __name__ == "__main__":
    main()
