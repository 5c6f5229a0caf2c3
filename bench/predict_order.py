"""A torch victim's prediction with its batches in the order given against batches of similar length.

Run from the repository root after ``python -m bench.robustness`` (its COLD test records) and
``python -m bench.victims --neural bert`` (the victim)::

    .venv/bin/python -m bench.predict_order   # --victim: bench.victims' bert by default

writes ``bench/results/predict_order.json``. ``predict_proba`` sorts the posts by length before it
batches them (a batch pads to its longest post) and answers in the order asked; the other way is the
same model's ``batch_probabilities`` over batches taken in the order given, as ``predict_proba`` did
before. Both in one process, one thread, alternating, ``--repeats`` times, on the first ``--posts``
COLD test posts (4 to 127 characters); the largest difference in a probability is recorded too.
"""
from __future__ import annotations

import time
from pathlib import Path

from bench.common import (RESULTS, WORK, cold_test, machine_info, parser, print_summary, relative, require,
                          write_result)


def timed_ways(victim, texts: list[str], repeats: int) -> tuple[dict[str, list[float]], dict]:
    """Seconds of each way, ``repeats`` times alternating, and the probabilities each gave."""
    size = victim.predict_batch_size
    ways = {"in_order": lambda: victim.batch_probabilities(victim.batch(texts[i:i + size])
                                                           for i in range(0, len(texts), size)),
            "by_length": lambda: victim.predict_proba(texts)}
    seconds: dict[str, list[float]] = {way: [] for way in ways}
    probs = {}
    for _ in range(repeats):
        for way, predict in ways.items():
            t0 = time.perf_counter()
            probs[way] = predict()
            seconds[way].append(round(time.perf_counter() - t0, 2))
    return seconds, probs


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "predict_order.json", work=WORK)
    ap.add_argument("--victim", type=Path, default=WORK / "victims" / "bert")
    ap.add_argument("--posts", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    started = time.perf_counter()
    require(args.victim / "victim.json", "python -m bench.victims --neural bert")
    import numpy as np
    import torch

    from attacks import load_victim
    from cloak.common.io import read_records

    torch.set_num_threads(1)
    victim = load_victim(str(args.victim))
    texts = [r["text"] for _, r in read_records(str(cold_test(args.work)))][:args.posts]
    seconds, probs = timed_ways(victim, texts, args.repeats)
    best = {way: min(times) for way, times in seconds.items()}
    result = {"benchmark": "bench/predict_order.py", "machine": machine_info(("torch", "transformers")),
              "victim": relative(args.victim), "posts": len(texts), "batch_size": victim.predict_batch_size,
              "characters": {"min": min(map(len, texts)), "median": float(np.median([len(t) for t in texts])),
                             "max": max(map(len, texts))},
              "seconds": seconds, "speedup_best": round(best["in_order"] / best["by_length"], 2),
              "max_abs_difference": float(np.abs(probs["in_order"] - probs["by_length"]).max()),
              "total_seconds": round(time.perf_counter() - started, 1)}
    write_result(args.out, result)
    print_summary([(way, f"{best[way]:.2f} s", f"runs {seconds[way]}") for way in seconds]
                  + [("speed-up", f"{result['speedup_best']}x", f"max difference {result['max_abs_difference']:.1e}")],
                  args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
