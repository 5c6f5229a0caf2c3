"""The speech step in one process or in several: posts a second, and whether the features agree.

Run from the repository root, with real weights fetched by ``make weights`` (``mmcloak-weights``)::

    .venv/bin/python -m bench.speech_workers --weights weights            # about 5 min on 2 cores (908 texts)
    .venv/bin/python -m bench.speech_workers --weights weights --posts 40 # smoke run

A fresh MMBERT run speaks and encodes every text it reads before it trains (``bench.mmbert_cold``: 11,823
texts, eSpeak NG + Whisper base). Here: the first ``--posts`` COLD test posts of 8-32 characters and their
homophone cloaks (``Perturber(ops="homophone", seed=0)``), through
``SpeechFeatures.features(texts, workers=N)`` with a fresh cache each time, for one process (all the
cores' threads) and for ``--workers`` processes (the cores shared among them), alternating over
``--rounds`` rounds in this one process, because the machine is shared and noisy: compare the ratio.
Timed from building the features (Whisper loaded) to the last text; the largest difference between the
two ways' features is reported too.
"""
from __future__ import annotations

import os
import shutil
import time

import numpy as np

from bench.common import RESULTS, WORK, cold_records, machine_info, parser, print_summary, ratio, weight_files, \
    write_result


def texts_of(cold, n: int) -> list[str]:
    """The first ``n`` test posts of 8-32 characters and their homophone cloaks, each text once."""
    from cloak import Perturber

    posts = [r["text"] for r in cold_records(cold, "test") if 8 <= len(r["text"]) <= 32][:n]
    perturber = Perturber(ops="homophone", seed=0)
    cloaks = [perturber(text, key=i).text for i, text in enumerate(posts)]
    return sorted(set(posts) | set(cloaks))


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "speech_workers.json", cold=True, work=WORK / "speech_workers", weights=True)
    ap.add_argument("--posts", type=int, default=600, help="COLD test posts (each with its homophone cloak)")
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)), help="processes [one a core]")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of one process then workers, order alternating")
    args = ap.parse_args()
    whisper = weight_files(ap, args.weights, "whisper-base.pt")[0]
    from mmbert.loading import speech_features

    texts = texts_of(args.cold, args.posts)
    started, seconds, features = time.perf_counter(), {1: [], args.workers: []}, {}
    for round_ in range(args.rounds):
        for workers in ((1, args.workers) if round_ % 2 == 0 else (args.workers, 1)):
            cache = args.work / f"cache_{workers}"
            shutil.rmtree(cache, ignore_errors=True)
            begun = time.perf_counter()
            speech = speech_features({"tts": {"name": "espeak-ng"}, "whisper": str(whisper),
                                      "whisper_mode": "trimmed", "speech_cache": str(cache)})
            features[workers] = speech.features(texts, progress=True, workers=workers)
            seconds[workers].append(round(time.perf_counter() - begun, 1))
            print(f"round {round_}: {workers} process(es), {seconds[workers][-1]} s", flush=True)
    difference = max(float(np.abs(a.astype(np.float32) - b.astype(np.float32)).max())
                     for a, b in zip(features[1], features[args.workers]))
    best = {w: min(s) for w, s in seconds.items()}
    result = {
        "benchmark": "bench/speech_workers.py", "texts": len(texts), "posts": args.posts, "tts": "espeak-ng",
        "whisper": "base, trimmed", "rounds": args.rounds, "workers": args.workers,
        "seconds": {str(w): s for w, s in seconds.items()},
        "posts_per_second": {str(w): round(len(texts) / b, 2) for w, b in best.items()},
        "speedup": ratio(best[1], best[args.workers]),
        "max_abs_feature_difference": round(difference, 5),
        "machine": machine_info(("torch", "openai-whisper")),
    }
    write_result(args.out, result)
    print_summary([("texts", str(len(texts)), f"{args.posts} posts + homophone cloaks"),
                   ("one process", f"{best[1]} s", f"{result['posts_per_second']['1']} texts/s"),
                   (f"{args.workers} processes", f"{best[args.workers]} s",
                    f"{result['posts_per_second'][str(args.workers)]} texts/s"),
                   ("speedup", f"{result['speedup']}x", "best round of each"),
                   ("max feature difference", str(result["max_abs_feature_difference"]), "float16 frames")],
                  args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
