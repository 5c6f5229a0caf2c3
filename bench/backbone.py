"""The shared ``small`` BERT backbone every benchmark builds on: masked-LM pre-training on every
unlabelled post we may use, for as long as the held-out loss keeps falling.

Run from the repository root: ``.venv/bin/python -m bench.backbone`` (resumable: run it again after an
interruption); writes the backbone to ``WORK/backbone/`` (``bench.common.WORK``, in the repository) and its figures to
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

import os
import subprocess
import time

from bench.common import (BIN, RESULTS, WORK, backbone_log, corpus, folder, machine_info, parser, relative, shown,
                          write_result)
from cloak.common.io import write_records


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "backbone.json", cold=True, swsr=True, work=WORK)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    started = time.perf_counter()

    folder(args.work)
    texts = corpus(args.cold, args.swsr, args.seed)
    corpus_path = args.work / "backbone_corpus.jsonl"
    if not corpus_path.exists():
        write_records(str(corpus_path), ({"text": t} for t in texts))
    config = args.work / "backbone.yaml"
    config.write_text(f"preset: small\ntrain: {{max_length: 128, seed: {args.seed}, checkpoint_minutes: 10, "
                      f"pretrain: {{epochs: {args.epochs}, lr: 5.0e-4, patience: 2}}}}\n", encoding="utf-8")
    out = args.work / "backbone"
    command = [BIN / "mmbert", "pretrain", "--corpus", corpus_path, "--config", config, "--out", out]
    if (out / "checkpoint" / "trainer_state.json").exists():
        command.append("--resume")
    print(shown(command), flush=True)
    subprocess.run([str(a) for a in command], check=True)  # in the foreground: its progress is the user's

    log, best = backbone_log(out)
    result = {"benchmark": "bench/backbone.py", "machine": machine_info(("torch", "transformers")),
              "corpus": {"sources": ["COLD train", "SWSR SexComment"], "distinct_texts": len(texts),
                         "held_out": max(1, len(texts) // 50)},
              "config": config.read_text(encoding="utf-8"), "backbone": relative(out),
              "epochs_run": len(log), "best_epoch": best["epoch"], "best_dev_mlm_loss": best["dev_mlm_loss"],
              "log": log, "threads": os.environ.get("OMP_NUM_THREADS"),
              "seconds": round(time.perf_counter() - started, 1)}
    write_result(args.out, result, indent=2)
    print(f"best held-out MLM loss {best['dev_mlm_loss']:.4f} at epoch {best['epoch']} of {len(log)}; "
          f"backbone in {out}, figures in {args.out}")


if __name__ == "__main__":
    main()
