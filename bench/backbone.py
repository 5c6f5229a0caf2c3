"""The shared ``small`` BERT backbone every benchmark builds on: masked-LM pre-training on every
unlabelled post we may use, for as long as the held-out loss keeps falling.

Run from the repository root: ``.venv/bin/python bench/backbone.py`` (resumable: run it again after an
interruption); writes the backbone to ``bench/work/backbone/`` and its figures to
``bench/results/backbone.json``. No pretrained Chinese BERT is reachable on these machines, so
``bert``, ``chinesebert`` and MMBERT all start from this one, on the same footing.

Corpus: the texts of COLD train (25,726 posts) and SWSR (8,969 comments), distinct texts in a seeded
order; COLD dev and test stay unseen. Model: the ``small`` preset's shape (4 layers, 256 wide, 128
positions), posts cut to 128 tokens, batches of 32, lr 5e-4 with 6% warm-up and linear decay over at
most ``--epochs`` epochs; 2% of the corpus is held out and the epoch with the lowest held-out loss is
kept, stopping after two epochs without improvement. An epoch takes about 30 minutes on one core of
these machines; the README's backbone had ``--epochs 3`` (``make bench-attacks``), a session's budget.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.machine import machine_info  # noqa: E402
from cloak.convert import read_dataset  # noqa: E402
from cloak.io import write_atomic  # noqa: E402

SHARED = REPO.parent / "shared" / "data"


def corpus(cold: Path, swsr: Path, seed: int) -> list[str]:
    texts = [r["text"] for r in read_dataset("cold", str(cold / "train.csv"))]
    texts += [r["text"] for r in read_dataset("swsr", str(swsr / "SexComment.csv"))]
    distinct = sorted(set(texts))
    random.Random(seed).shuffle(distinct)
    return distinct


def training_log(backbone: Path) -> tuple[list[dict], dict]:
    """A backbone's training log (an entry an epoch) and its best epoch: the lowest held-out masked-LM loss."""
    log = json.loads((backbone / "log.json").read_text(encoding="utf-8"))
    return log, min(log, key=lambda e: e["dev_mlm_loss"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cold", type=Path, default=SHARED / "cold")
    ap.add_argument("--swsr", type=Path, default=SHARED / "swsr")
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "backbone.json")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    started = time.perf_counter()

    args.work.mkdir(parents=True, exist_ok=True)
    texts = corpus(args.cold, args.swsr, args.seed)
    corpus_path = args.work / "backbone_corpus.jsonl"
    if not corpus_path.exists():
        write_atomic(corpus_path, "".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts).encode())
    config = args.work / "backbone.yaml"
    config.write_text(f"preset: small\ntrain: {{max_length: 128, seed: {args.seed}, checkpoint_minutes: 10, "
                      f"pretrain: {{epochs: {args.epochs}, lr: 5.0e-4, patience: 2}}}}\n", encoding="utf-8")
    out = args.work / "backbone"
    command = [str(Path(sys.executable).parent / "mmbert"), "pretrain", "--corpus", str(corpus_path), "--config",
               str(config), "--out", str(out)]
    if (out / "checkpoint" / "trainer_state.json").exists():
        command.append("--resume")
    print(" ".join(command), flush=True)
    subprocess.run(command, check=True)

    log, best = training_log(out)
    result = {"benchmark": "bench/backbone.py", "machine": machine_info(("torch", "transformers")),
              "corpus": {"sources": ["COLD train", "SWSR SexComment"], "distinct_texts": len(texts),
                         "held_out": max(1, len(texts) // 50)},
              "config": config.read_text(encoding="utf-8"), "backbone": str(out.relative_to(REPO)),
              "epochs_run": len(log), "best_epoch": best["epoch"], "best_dev_mlm_loss": best["dev_mlm_loss"],
              "log": log, "threads": os.environ.get("OMP_NUM_THREADS"),
              "seconds": round(time.perf_counter() - started, 1)}
    write_atomic(args.out, (json.dumps(result, indent=2, ensure_ascii=False) + "\n").encode())
    print(f"best held-out MLM loss {best['dev_mlm_loss']:.4f} at epoch {best['epoch']} of {len(log)}; "
          f"backbone in {out}, figures in {args.out}")


if __name__ == "__main__":
    main()
