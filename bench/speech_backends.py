"""eSpeak NG against Kokoro as the speech modality's TTS: how well Whisper understands each, whether a
homophone cloak still sounds like its post, and how fast each speaks.

Run from the repository root with the real weights ``make weights`` fetches and the
``espeak-ng`` program (``apt-get install espeak-ng``)::

    .venv/bin/python -m bench.speech_backends --weights $MMCLOAK_WEIGHTS

The posts and measures of ``bench.speech``, both backends in one process, back to back on the same
posts: the first ``--cer-posts`` COLD test posts of 8-40 characters spoken and transcribed back by
Whisper base (character error rate against ``speakable(post)``); the first ``--pairs`` of those posts
that a homophone cloak changes, post and cloak through Whisper base's trimmed encoder, mean-pooled
(cosine of post and cloak against post and another post); synthesis seconds a post after a warm-up.
Writes ``bench/results/speech_backends.json``.
"""
from __future__ import annotations

import time

from bench.common import (RESULTS, cold_records, machine_info, parser, print_summary, timed, weight_files,
                          write_result)
from bench.speech_measures import MAX_CHARS, MIN_CHARS, VOICE, Normaliser, Synth, stage_cer, stage_homophones


def homophone_pairs(posts: list[dict], n: int) -> tuple[object, list[tuple[str, str]]]:
    """The perturber of ``bench.speech`` and the first ``n`` posts it changes in how they sound, with their cloaks."""
    from cloak import Perturber
    from speech import speakable

    perturber = Perturber(ops="homophone", targets="all", rate=0.5, seed=0)  # as bench.speech
    cloaks = [(p["text"], perturber(p["text"], key=i)) for i, p in enumerate(posts[:4 * n])]
    return perturber, [(src, c.text) for src, c in cloaks if c.changed and speakable(c.text) != speakable(src)][:n]


def backend_figures(make, posts: list[dict], pairs: list[tuple[str, str]], model, encoder, cer_posts: int) -> dict:
    """One backend: its load time, CER through Whisper, synthesis speed and the homophones' similarity."""
    from speech import speakable

    synth, load = timed(lambda: Synth(make()))
    cer, speed = stage_cer(posts, synth, model, Normaliser(), speakable, cer_posts)
    homophones, _ = stage_homophones(pairs, synth, encoder)
    return {"backend": synth.backend.cache_key, "load_s": round(load, 2),
            "synth_s_per_post": speed["synth_s"] / speed["n_sentences"], "rtf": speed["rtf"],
            "mean_audio_s": speed["mean_audio_s"],
            "cer_vs_speakable": cer["cer_vs_speakable"], "corpus_cer_vs_speakable":
            cer["corpus_cer_vs_speakable"], "share_cer_zero": cer["share_cer_zero_vs_speakable"],
            "worst5": cer["worst5"], "homophones": homophones}


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "speech_backends.json", cold=True, weights=True)
    ap.add_argument("--cer-posts", type=int, default=50)
    ap.add_argument("--pairs", type=int, default=60)
    ap.add_argument("--backends", default="espeak-ng,kokoro-onnx", help="which to run (Kokoro takes ~10 min)")
    args = ap.parse_args()
    whisper_ckpt, kokoro_model = weight_files(ap, args.weights, "whisper-base.pt", "kokoro/kokoro-v1.0.int8.onnx")
    started = time.perf_counter()
    import torch
    import whisper

    from speech import make_backend
    from speech.features import WhisperEncoder

    torch.set_num_threads(2)
    posts = [r for r in cold_records(args.cold, "test") if MIN_CHARS <= len(r["text"]) <= MAX_CHARS]
    model = whisper.load_model(str(whisper_ckpt), device="cpu")
    encoder = WhisperEncoder(model, mode="trimmed")
    perturber, pairs = homophone_pairs(posts, args.pairs)
    backends = {"espeak-ng": lambda: make_backend("espeak-ng"),
                "kokoro-onnx": lambda: make_backend("kokoro-onnx", str(kokoro_model), voice=VOICE)}
    figures = {name: backend_figures(backends[name], posts, pairs, model, encoder, args.cer_posts)
               for name in args.backends.split(",")}
    result = {"benchmark": "bench/speech_backends.py", "machine": machine_info(("torch", "onnxruntime")),
              "posts": f"COLD test.csv in file order, {MIN_CHARS}-{MAX_CHARS} characters",
              "cer_posts": args.cer_posts, "pairs": len(pairs), "perturber": repr(perturber),
              "backends": figures,
              "espeak_speedup": (round(figures["kokoro-onnx"]["synth_s_per_post"] /
                                       figures["espeak-ng"]["synth_s_per_post"], 1) if len(figures) == 2 else None),
              "seconds": round(time.perf_counter() - started, 1)}
    write_result(args.out, result)
    rows = [(name, f"CER {f['cer_vs_speakable']['mean']:.3f}",
             f"{f['synth_s_per_post'] * 1000:.0f} ms a post; homophone cos {f['homophones']['cos_cloak_mean']:.4f} "
             f"vs other {f['homophones']['cos_other_mean']:.4f}")
            for name, f in figures.items()]
    print_summary(rows, args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
