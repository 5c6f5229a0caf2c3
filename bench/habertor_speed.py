"""HABERTOR-VAFOQF against a BERT-base-shaped model: training and inference examples per second and peak
memory (Tran et al. report 4-5x faster, under a third of the memory).

HABERTOR: Tran et al., "HABERTOR: An Efficient and Effective Deep Hatespeech Detector", EMNLP 2020,
arXiv:2010.08865.

Run from the repository root: ``.venv/bin/python -m bench.habertor_speed``; writes
``bench/results/habertor_speed.json``. Random weights, random token ids, the same batch (32) and
length (128) for both: VAFOQF at Tran et al.'s Table 2 shape (V 40k, E 128, H 384, L 6, 6 heads, C 192,
I 128) with its two ensemble heads, against transformers' ``BertForSequenceClassification`` at BERT
base's (V 30,522, H 768, L 12, 12 heads). Training is a forward, a backward and an AdamW step on the
classification loss; inference a forward without gradients. Each model runs in its own process (so
its peak resident memory is its own), one after the other, ``--repeats`` times alternating; the
figures are the medians and the ratios are of the medians.
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

from bench.common import REPO, RESULTS, machine_info, parser, write_result


def build(kind: str):
    import torch

    torch.manual_seed(0)
    if kind == "habertor-vafoqf":
        from attacks.nn.habertor_model import HabertorConfig, HabertorForClassification

        config = HabertorConfig.preset("vafoqf", vocab_size=40000)
        model = HabertorForClassification(config, 2, sources=1, heads=2, pooling="min")
        return model, config.vocab_size, lambda ids, mask: model(mask, torch.full((len(ids),), -1), input_ids=ids)
    from transformers import BertConfig, BertForSequenceClassification

    model = BertForSequenceClassification(BertConfig(num_labels=2))
    model.config.problem_type = "single_label_classification"
    return model, model.config.vocab_size, lambda ids, mask: model(input_ids=ids, attention_mask=mask).logits


def measure_one(kind: str, batch: int, length: int, steps: int) -> dict:
    import torch

    model, vocab, logits_of = build(kind)
    ids = torch.randint(5, vocab, (batch, length), generator=torch.Generator().manual_seed(1))
    mask, labels = torch.ones_like(ids), torch.arange(batch) % 2
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    model.train()
    times = []
    for step in range(steps + 1):  # the first step warms up
        started = time.perf_counter()
        torch.nn.functional.cross_entropy(logits_of(ids, mask), labels).backward()
        optimizer.step()
        optimizer.zero_grad()
        times.append(time.perf_counter() - started)
    train = batch * steps / sum(times[1:])
    model.eval()
    times = []
    with torch.no_grad():
        for step in range(steps + 1):
            started = time.perf_counter()
            logits_of(ids, mask)
            times.append(time.perf_counter() - started)
    infer = batch * steps / sum(times[1:])
    return {"parameters": sum(p.numel() for p in model.parameters()), "train_examples_per_s": round(train, 2),
            "inference_examples_per_s": round(infer, 2),
            "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "habertor_speed.json")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--length", type=int, default=128)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one model in this process
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure_one(args.one, args.batch, args.length, args.steps)))
        return
    started = time.perf_counter()
    kinds = ("habertor-vafoqf", "bert-base")
    runs: dict[str, list[dict]] = {k: [] for k in kinds}
    for repeat in range(args.repeats):
        for kind in kinds:
            out = subprocess.run([sys.executable, "-m", "bench.habertor_speed", "--one", kind, "--batch",
                                  str(args.batch), "--length", str(args.length), "--steps", str(args.steps)],
                                 check=True, capture_output=True, text=True, cwd=REPO).stdout
            runs[kind].append(json.loads(out.strip().splitlines()[-1]))
            print(kind, runs[kind][-1], flush=True)
    medians = {k: {m: statistics.median(r[m] for r in rs) for m in rs[0]} for k, rs in runs.items()}
    h, b = medians["habertor-vafoqf"], medians["bert-base"]
    result = {"benchmark": "bench/habertor_speed.py", "machine": machine_info(("torch", "transformers")),
              "batch": args.batch, "length": args.length, "steps": args.steps, "repeats": args.repeats,
              "runs": runs, "medians": medians,
              "ratios": {"training_speed": round(h["train_examples_per_s"] / b["train_examples_per_s"], 2),
                         "inference_speed": round(h["inference_examples_per_s"] / b["inference_examples_per_s"], 2),
                         "peak_memory": round(h["peak_mb"] / b["peak_mb"], 3),
                         "parameters": round(h["parameters"] / b["parameters"], 4)},
              "seconds": round(time.perf_counter() - started, 1)}
    write_result(args.out, result)
    print(json.dumps(result["ratios"]))


if __name__ == "__main__":
    main()
