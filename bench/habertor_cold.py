"""HABERTOR on COLD: pre-trained on the domain, fine-tuned with adaptive FGM, plain FGM and none, scored
on COLD test clean and under the evaluator's FGM.

HABERTOR: Tran et al., "HABERTOR: An Efficient and Effective Deep Hatespeech Detector", EMNLP 2020,
arXiv:2010.08865.

Run from the repository root: ``.venv/bin/python -m bench.habertor_cold`` (each step is skipped when its
output is there, so a rerun continues), after ``python -m bench.regularizers`` for the ``bert`` it is
compared with; writes ``bench/results/habertor_cold.json``. Every step is the command a user runs,
timed as a whole:

1. ``attacks pretrain-habertor`` on the texts of COLD train and SWSR (``bench.backbone``'s corpus:
   34,622 distinct texts), VAFOQF at the shape of the ``small`` BERT every other torch victim starts
   from (4 layers, 256 wide; C 128, I 128, E 128), a SentencePiece vocabulary of 20,000, tau 2,
   ``--epochs`` epochs (5 by default, the best kept: on COLD the held-out loss is lowest at epoch 3;
   Tran et al. run 60 on 33M posts);
2. ``attacks train --model habertor --source-field topic --adv X`` for X in adaptive, none and fgm
   (its default eps), on ``--train-size`` COLD train posts (a seeded sample, 10,000 by default: the same posts
   ``bench.regularizers`` trains on; dev: the first 1,000 COLD dev posts), ``--finetune-epochs``
   epochs at lr 1e-4 (the small ``bert`` victim's recipe);
3. ``attacks evaluate --attacks fgm --eps 0.1,0.25,0.5,1`` on all 5,323 COLD test posts, the three HABERTORs and
   a small ``bert`` side by side (``--compare``; by default, where ``bench.regularizers`` has trained
   it, its ``bert-none``: same shape, same pre-training corpus, same posts, one epoch): macro-F1, AUC,
   AP and FPR@5%FNR clean, and macro-F1 under FGM.
"""
from __future__ import annotations

import json
import random
import time
from pathlib import Path

from bench.common import (BIN, RESULTS, WORK, cold_records, corpus, folder, machine_info, parser, read_json, run,
                          victim_flags, write_result)
from cloak.common.io import write_records

SHAPE = {"embedding_size": 128, "hidden_size": 256, "num_layers": 4, "num_heads": 4, "attention_size": 128,
         "intermediate_size": 128, "feedforward_size": 1024, "max_position": 128}
ADVERSARIAL = ("adaptive", "none", "fgm")
EVAL_EPS = "0.1,0.25,0.5,1"  # a COLD post's embeddings have a median L2 norm of about 3.8


def learnt_eps(folder: Path) -> dict | None:
    """Adaptive FGM's learnt per-dimension eps (min, median, max), for a model trained with it: Tran
    et al.'s Fig. 2 shows a spread over dimensions."""
    from safetensors import safe_open

    with safe_open(str(folder / "model.safetensors"), "pt") as weights:
        if "noise.eps" not in weights.keys():
            return None
        eps = weights.get_tensor("noise.eps")
    return {"min": eps.min().item(), "median": eps.median().item(), "max": eps.max().item()}


def prepare(args, work: Path) -> tuple[Path, dict[str, Path]]:
    """The pre-training corpus, and the COLD records: a seeded sample of train, 1,000 dev posts, all of test."""
    corpus_path = work / "corpus.jsonl"
    if not corpus_path.exists():
        write_records(str(corpus_path), ({"text": t} for t in corpus(args.cold, args.swsr, 0)))
    data = {}
    for split in ("train", "dev", "test"):
        data[split] = work / f"cold_{split}.jsonl"
        if not data[split].exists():
            rows = cold_records(args.cold, split)
            if split == "train":
                rows = random.Random(0).sample(rows, min(args.train_size, len(rows)))
            write_records(str(data[split]), rows[:1000] if split == "dev" else rows)
    return corpus_path, data


def pretrain(args, work: Path, corpus_path: Path, steps: dict) -> Path:
    """``attacks pretrain-habertor`` (resumed where a checkpoint is there), once."""
    lm = work / "lm"
    if not (lm / "pretrain_log.json").exists():
        (work / "pretrain.yaml").write_text(json.dumps({"model": SHAPE, "training": {
            "vocab_size": 20000, "lr": 5e-4, "batch_size": 32, "max_length": 128}}) + "\n")
        run([BIN / "attacks", "pretrain-habertor", "--corpus", corpus_path, "--out", lm, "--preset",
             "vafoqf", "--config", work / "pretrain.yaml", "--tau", str(args.tau), "--epochs",
             str(args.epochs), "-q", *(["--resume"] if (lm / "checkpoint").exists() else [])], steps, "pretrain")
    return lm


def finetune(args, work: Path, lm: Path, data: dict[str, Path], steps: dict) -> list[Path]:
    """A HABERTOR for each adversarial training, once each."""
    (work / "finetune.yaml").write_text(json.dumps({"config": {"max_length": 128}, "training": {
        "epochs": args.finetune_epochs, "lr": 1e-4, "batch_size": 32, "patience": 2}}) + "\n")
    victims = []
    for adv in ADVERSARIAL:
        out = work / "victims" / f"habertor-{adv}"
        victims.append(out)
        if not (out / "victim.json").exists():
            run([BIN / "attacks", "train", "--model", "habertor", "--backbone", lm, "--source-field", "topic",
                 "--adv", adv, "--train", data["train"], "--dev", data["dev"], "--config", work / "finetune.yaml",
                 "--out", out, "-q", *(["--resume"] if (out / "checkpoint").exists() else [])], steps, f"train {adv}")
    return victims


def victim_row(folder: Path, entry: dict) -> dict:
    """A victim's figures: clean, under each eps, its training and (adaptive FGM) its learnt eps."""
    clean = entry["clean"]
    row = {k: clean[k] for k in ("f1", "accuracy", "auc", "average_precision", "fpr_at_5_fnr", "fnr_at_5_fpr")}
    for attack, figures in entry["attacks"].items():
        row[f"{attack} f1"], row[f"{attack} accuracy"] = figures["all"]["f1"], figures["all"]["accuracy"]
    if (folder / "training.json").exists():
        training = read_json(folder / "training.json")
        row["train_seconds"] = training["seconds"]
        row["dev_f1"] = training["dev_figures"]["f1"]
    eps = learnt_eps(folder)
    if eps is not None:
        row["learnt_eps"] = eps
    return row


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "habertor_cold.json", cold=True, swsr=True, work=WORK)
    ap.add_argument("--epochs", type=int, default=5, help="pre-training epochs")
    ap.add_argument("--finetune-epochs", type=int, default=1)
    ap.add_argument("--tau", type=int, default=2)
    ap.add_argument("--train-size", type=int, default=10000, help="COLD train posts to fine-tune on (a seeded "
                    "sample, the same as bench.regularizers's)")
    ap.add_argument("--compare", type=Path, help="a bert victim to score beside the HABERTORs (default: "
                    "bench.regularizers's bert-none, trained on the same 10,000 posts)")
    args = ap.parse_args()
    started = time.perf_counter()
    work = folder(args.work / "habertor")
    steps: dict = read_json(args.out, {}).get("steps", {})
    corpus_path, data = prepare(args, work)
    lm = pretrain(args, work, corpus_path, steps)
    victims = finetune(args, work, lm, data, steps)
    bert = args.compare or args.work / "regularizers" / "victims" / "bert-none"
    if (bert / "victim.json").exists():
        victims.append(bert)
    evaluation = work / "evaluate"
    if not (evaluation / "summary.json").exists():
        run([BIN / "attacks", "evaluate", *victim_flags(victims), "--data", data["test"],
             "--attacks", "fgm", "--eps", EVAL_EPS, "--out", evaluation, "-q"], steps, "evaluate")
    summary = read_json(evaluation / "summary.json")
    table = {name: victim_row(next(v for v in victims if v.name == name), entry)
             for name, entry in summary["victims"].items()}
    pretrain_log = read_json(lm / "pretrain_log.json")
    result = {"benchmark": "bench/habertor_cold.py", "machine": machine_info(("torch", "transformers", "tokenizers")),
              "shape": SHAPE, "preset": "vafoqf", "tau": args.tau, "pretrain": {
                  k: pretrain_log[k] for k in ("best_epoch", "best_mlm_loss", "vocab_size", "texts",
                                               "sequences_per_epoch", "seconds")},
              "steps": steps, "victims": table, "seconds": round(time.perf_counter() - started, 1)}
    write_result(args.out, result)
    for name, row in table.items():
        print(name, json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}))


if __name__ == "__main__":
    main()
