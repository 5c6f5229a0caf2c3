"""eSpeak NG against Kokoro as the speech modality's TTS: how well Whisper understands each, whether a
homophone cloak still sounds like its post, and how fast each speaks.

Run from the repository root with the real weights of ``shared/models/offline_weights.py`` and the
``espeak-ng`` program (``apt-get install espeak-ng``)::

    .venv/bin/python bench/speech_backends.py --weights bench/work/weights

The posts and measures of ``bench/speech.py``, both backends in one process, back to back on the same
posts: the first ``--cer-posts`` COLD test posts of 8-40 characters spoken and transcribed back by
Whisper base (character error rate against ``speakable(post)``); the first ``--pairs`` of those posts
that a homophone cloak changes, post and cloak through Whisper base's trimmed encoder, mean-pooled
(cosine of post and cloak against post and another post); synthesis seconds a post after a warm-up.
Writes ``bench/results/speech_backends.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.machine import machine_info  # noqa: E402
from bench.speech import MAX_CHARS, MIN_CHARS, VOICE, Normaliser, Synth, stage_cer, stage_homophones  # noqa: E402
from bench.summary import print_summary  # noqa: E402
from cloak.io import write_atomic  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--weights", type=Path, default=os.environ.get("MMCLOAK_WEIGHTS"))
    ap.add_argument("--cold", type=Path, default=REPO.parent / "shared" / "data" / "cold")
    ap.add_argument("--cer-posts", type=int, default=50)
    ap.add_argument("--pairs", type=int, default=60)
    ap.add_argument("--backends", default="espeak-ng,kokoro-onnx", help="which to run (Kokoro takes ~10 min)")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "speech_backends.json")
    args = ap.parse_args()
    if not args.weights:
        ap.error("no weights: pass --weights DIR (shared/models/offline_weights.py makes it)")
    started = time.perf_counter()
    import torch
    import whisper

    from cloak import Perturber
    from cloak.convert import read_dataset
    from speech import make_backend, speakable
    from speech.features import WhisperEncoder

    torch.set_num_threads(2)
    posts = [r for r in read_dataset("cold", str(args.cold / "test.csv")) if MIN_CHARS <= len(r["text"]) <= MAX_CHARS]
    model = whisper.load_model(str(args.weights / "whisper-base.pt"), device="cpu")
    encoder = WhisperEncoder(model, mode="trimmed")
    perturber = Perturber(ops="homophone", targets="all", rate=0.5, seed=0)  # as bench/speech.py
    cloaks = [(p["text"], perturber(p["text"], key=i)) for i, p in enumerate(posts[:4 * args.pairs])]
    pairs = [(src, c.text) for src, c in cloaks if c.changed and speakable(c.text) != speakable(src)][:args.pairs]
    kokoro_model = str(args.weights / "kokoro" / "kokoro-v1.0.int8.onnx")
    backends = {"espeak-ng": lambda: make_backend("espeak-ng"),
                "kokoro-onnx": lambda: make_backend("kokoro-onnx", kokoro_model, voice=VOICE)}
    figures = {}
    for name in args.backends.split(","):
        make = backends[name]
        t0 = time.perf_counter()
        synth = Synth(make())
        load = time.perf_counter() - t0
        cer, speed = stage_cer(posts, synth, model, Normaliser(), speakable, args.cer_posts)
        homophones, _ = stage_homophones(pairs, synth, encoder)
        figures[name] = {"backend": synth.backend.cache_key, "load_s": round(load, 2),
                         "synth_s_per_post": speed["synth_s"] / speed["n_sentences"], "rtf": speed["rtf"],
                         "mean_audio_s": speed["mean_audio_s"],
                         "cer_vs_speakable": cer["cer_vs_speakable"], "corpus_cer_vs_speakable":
                         cer["corpus_cer_vs_speakable"], "share_cer_zero": cer["share_cer_zero_vs_speakable"],
                         "worst5": cer["worst5"], "homophones": homophones}
    result = {"benchmark": "bench/speech_backends.py", "machine": machine_info(("torch", "onnxruntime")),
              "posts": f"COLD test.csv in file order, {MIN_CHARS}-{MAX_CHARS} characters",
              "cer_posts": args.cer_posts, "pairs": len(pairs), "perturber": repr(perturber),
              "backends": figures,
              "espeak_speedup": (round(figures["kokoro-onnx"]["synth_s_per_post"] /
                                       figures["espeak-ng"]["synth_s_per_post"], 1) if len(figures) == 2 else None),
              "seconds": round(time.perf_counter() - started, 1)}
    write_atomic(args.out, (json.dumps(result, indent=1, ensure_ascii=False) + "\n").encode())
    rows = [(name, f"CER {f['cer_vs_speakable']['mean']:.3f}",
             f"{f['synth_s_per_post'] * 1000:.0f} ms a post; homophone cos {f['homophones']['cos_cloak_mean']:.4f} "
             f"vs other {f['homophones']['cos_other_mean']:.4f}")
            for name, f in figures.items()]
    print_summary(rows, args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
