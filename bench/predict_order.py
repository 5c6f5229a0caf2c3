"""A torch victim's prediction with its batches in the order given against batches of similar length.

Run from the repository root after ``bench/victims.py --neural`` (``bert``)::

    .venv/bin/python bench/predict_order.py --victim bench/work/victims/bert

writes ``bench/results/predict_order.json``. ``predict_proba`` sorts the posts by length before it
batches them (a batch pads to its longest post) and answers in the order asked; the other way is the
same model's ``batch_probabilities`` over batches taken in the order given, as ``predict_proba`` did
before. Both in one process, one thread, alternating, ``--repeats`` times, on the first ``--posts``
COLD test posts (4 to 127 characters); the largest difference in a probability is recorded too.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.machine import machine_info  # noqa: E402
from bench.robustness import cold_test  # noqa: E402
from bench.summary import print_summary  # noqa: E402
from cloak.io import write_atomic  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--victim", type=Path, default=REPO / "bench" / "work" / "victims" / "bert")
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--posts", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "predict_order.json")
    args = ap.parse_args()
    started = time.perf_counter()
    import numpy as np
    import torch

    from attacks import load_victim

    torch.set_num_threads(1)
    victim = load_victim(str(args.victim))
    with open(cold_test(args.work), encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f][:args.posts]
    size = victim.predict_batch_size
    ways = {"in_order": lambda: victim.batch_probabilities(victim.batch(texts[i:i + size])
                                                           for i in range(0, len(texts), size)),
            "by_length": lambda: victim.predict_proba(texts)}
    seconds: dict[str, list[float]] = {way: [] for way in ways}
    probs = {}
    for _ in range(args.repeats):
        for way, predict in ways.items():
            t0 = time.perf_counter()
            probs[way] = predict()
            seconds[way].append(round(time.perf_counter() - t0, 2))
    best = {way: min(times) for way, times in seconds.items()}
    result = {"benchmark": "bench/predict_order.py", "machine": machine_info(("torch", "transformers")),
              "victim": str(args.victim.resolve().relative_to(REPO)) if args.victim.resolve().is_relative_to(REPO)
              else str(args.victim), "posts": len(texts), "batch_size": size,
              "characters": {"min": min(map(len, texts)), "median": float(np.median([len(t) for t in texts])),
                             "max": max(map(len, texts))},
              "seconds": seconds, "speedup_best": round(best["in_order"] / best["by_length"], 2),
              "max_abs_difference": float(np.abs(probs["in_order"] - probs["by_length"]).max()),
              "total_seconds": round(time.perf_counter() - started, 1)}
    write_atomic(args.out, (json.dumps(result, indent=1) + "\n").encode())
    print_summary([(way, f"{best[way]:.2f} s", f"runs {seconds[way]}") for way in ways]
                  + [("speed-up", f"{result['speedup_best']}x", f"max difference {result['max_abs_difference']:.1e}")],
                  args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
