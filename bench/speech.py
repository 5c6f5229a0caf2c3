"""Benchmark of ``speech``: Kokoro TTS intelligibility, homophone similarity in Whisper space, and speed.

Run from the repository root, with real weights fetched by ``make weights`` (``mmcloak-weights``)::

    make weights
    .venv/bin/python -m bench.speech --weights weights          # full run (~10 min on 2 cores)
    .venv/bin/python -m bench.speech --weights weights --quick  # smoke run

Posts are COLD test posts (``cloak.convert.read_dataset("cold", ...)``), chosen deterministically: the
first posts, in file order, whose text has 8 to 40 characters (a few seconds of speech).

1. CER: the first 50 such posts spoken by ``kokoro-onnx`` (voice zf_xiaobei) and transcribed back by the
   Whisper-base checkpoint (``language="zh"``). Both sides are normalised: punctuation and whitespace
   removed (only Unicode letters and digits kept), lower-cased, and converted to simplified Chinese with
   OpenCC ``t2s`` (Whisper often answers in traditional characters). CER = character Levenshtein distance
   / reference length, against the raw post and against ``speakable(post)`` (what the backend reads),
   and with the hypothesis also through ``speakable`` (Whisper writes 512 for 五一二). Transcription is
   greedy (``temperature=0.0``): deterministic, and the default temperature fallback (sampling,
   best_of=5) made some utterances take 20 s on this CPU.
2. Homophones sound alike: the first 200 posts (``--quick``: 40) and their homophone cloaks
   (``Perturber(ops="homophone", targets="all", rate=0.5, seed=0)``, key = the post's index; only posts
   the perturber changed). Features: trimmed Whisper-base encoder features, mean over frames. Reported:
   mean cosine(post, its cloak) against mean cosine(post, another post) under a fixed derangement, the
   margin, and the share of posts whose cloak is nearer than the deranged post. Also the same after
   subtracting the mean pooled vector of the set (centred cosine), which removes the "all speech looks
   alike" component that dominates pooled Whisper features. For ``tone`` and ``kokoro-onnx``; Kokoro
   uses the first pairs up to ``--kokoro-pairs`` and stops early when the run's time budget is spent.
3. Speed: Kokoro real-time factor (synthesis s / audio s) over the CER sentences after one warm-up;
   Whisper encoder, trimmed vs padded to 30 s, on the ~20 CER utterances nearest 3 s long, each cut to
   its first 3 s (the headline) and whole (the posts here average 7 s of speech), interleaved
   utterance by utterance (order alternating) after a warm-up; the cosine between the two modes'
   features on the utterance's frames; tone synthesis posts/s.

Everything runs in one process, back to back, because the machine is shared and noisy: compare ratios.
"""
from __future__ import annotations

import time

import numpy as np

from bench.common import (RESULTS, cold_records, log, machine_info, parser, print_summary, timed, weight_files,
                          write_result)
from bench.speech_measures import (CER_TARGET, MAX_CHARS, MIN_CHARS, VOICE, Normaliser, Synth, stage_cer,
                                   stage_homophones, summary)

SPEEDUP_TARGET = 5.0


def time_encoders(trimmed, padded, audios: list[np.ndarray]) -> dict:
    """Trimmed vs padded on the same utterances, interleaved (order alternating), after a warm-up."""
    trimmed.encode(audios[0]), padded.encode(audios[0])  # warm-up
    t_tr, t_pd, cos_frames, n_frames = [], [], [], []
    for k, a in enumerate(audios):
        order = [(trimmed, t_tr), (padded, t_pd)]
        if k % 2:
            order.reverse()
        out = {}
        for enc, times in order:
            t0 = time.perf_counter()
            out[enc.mode] = enc.encode(a)
            times.append(time.perf_counter() - t0)
        ft, fp = out["trimmed"], out["padded"]
        if ft.shape != fp.shape:
            raise AssertionError(f"trimmed {ft.shape} vs padded {fp.shape} frames differ")
        num = (ft * fp).sum(1)
        den = np.linalg.norm(ft, axis=1) * np.linalg.norm(fp, axis=1) + 1e-12
        cos_frames.append(float((num / den).mean()))
        n_frames.append(ft.shape[0])
    per_utt_ratio = [p / t for p, t in zip(t_pd, t_tr)]
    speedup = sum(t_pd) / sum(t_tr)
    return {
        "n_utterances": len(audios),
        "utterance_s": summary([len(a) / 16000 for a in audios]),
        "frames": summary(n_frames),
        "trimmed_s_per_utterance": float(np.mean(t_tr)),
        "padded_s_per_utterance": float(np.mean(t_pd)),
        "trimmed_s_median": float(np.median(t_tr)),
        "padded_s_median": float(np.median(t_pd)),
        "speedup_total": speedup,
        "speedup_median_per_utterance": float(np.median(per_utt_ratio)),
        "meets_target": bool(speedup >= SPEEDUP_TARGET),
        "cosine_trimmed_vs_padded": summary(cos_frames),
    }


def stage_encoder_speed(kokoro: Synth, texts: list[str], model, n: int) -> dict:
    from speech.features import WhisperEncoder, resample

    trimmed = WhisperEncoder(model, mode="trimmed")
    padded = WhisperEncoder(model, mode="padded")
    sr = kokoro.backend.sample_rate
    audios = [resample(kokoro(t), sr) for t in texts]
    chosen = sorted(range(len(audios)), key=lambda i: (abs(len(audios[i]) / 16000 - 3.0), i))[:n]
    chosen.sort()
    natural = [audios[i] for i in chosen]
    cropped = [a[:3 * 16000] for a in natural]
    return {
        "utterances": f"the {len(chosen)} CER utterances (Kokoro, resampled to 16 kHz) nearest 3 s long",
        "target_speedup": SPEEDUP_TARGET,
        "cropped_3s": time_encoders(trimmed, padded, cropped),
        "natural_length": time_encoders(trimmed, padded, natural),
        "note": "cropped_3s: each utterance cut to its first 3.0 s (the headline: ~3 s posts); "
                "natural_length: the same utterances whole. Cosine: per-frame cosine over the utterance's "
                "frames, mean over frames, then over utterances. Timing interleaved utterance by "
                "utterance, order alternating, after one warm-up of each mode.",
    }


def stage_tone_speed(tone: Synth, texts: list[str]) -> dict:
    """Posts a second of the tone synthesiser, after a warm-up (its pinyin tables)."""
    tone.backend.synthesize(texts[:5])
    t0 = time.perf_counter()
    audio = tone.backend.synthesize(texts)
    seconds = time.perf_counter() - t0
    return {"n_posts": len(texts), "seconds": seconds, "posts_per_s": len(texts) / seconds,
            "audio_s_per_post": float(np.mean([len(a) for a in audio])) / tone.backend.sample_rate}


def homophone_figures(posts: list[dict], n_hom: int, n_kok: int, tone: Synth, kokoro: Synth, model,
                      deadline: float) -> dict:
    """Posts and their homophone cloaks through Whisper's encoder, spoken by the tone synthesiser and by
    Kokoro (the first ``n_kok`` pairs, until ``deadline``), and by the tone synthesiser on Kokoro's pairs."""
    from cloak import Perturber
    from speech import speakable
    from speech.features import WhisperEncoder

    perturber = Perturber(ops="homophone", targets="all", rate=0.5, seed=0)
    pairs_all = [(i, p["text"], perturber(p["text"], key=i)) for i, p in enumerate(posts[:n_hom])]
    pairs = [(src, c.text) for i, src, c in pairs_all if c.changed and speakable(c.text) != speakable(src)]
    n_changed = sum(c.changed for _, _, c in pairs_all)
    log(f"2. homophones: {len(pairs)}/{n_hom} posts changed")
    encoder = WhisperEncoder(model, mode="trimmed")
    hom_tone, _ = stage_homophones(pairs, tone, encoder)
    log(f"   tone: cloak {hom_tone['cos_cloak_mean']:.4f} vs other {hom_tone['cos_other_mean']:.4f}")
    hom_kok, n_k = stage_homophones(pairs, kokoro, encoder, limit=n_kok, deadline=deadline)
    log(f"   kokoro ({n_k} pairs): cloak {hom_kok['cos_cloak_mean']:.4f} vs other {hom_kok['cos_other_mean']:.4f}")
    hom_tone_same, _ = stage_homophones(pairs, tone, encoder, limit=n_k)  # tone on Kokoro's subset
    return {
        "perturber": repr(perturber),
        "n_posts": n_hom, "n_changed": n_changed, "n_pairs_used": len(pairs),
        "features": "whisper-base encoder, mode=trimmed, mean over frames",
        "derangement": "random.Random(0) shuffle, redrawn until no fixed point; cos(post_i, post_perm[i])",
        "tone": hom_tone,
        "kokoro-onnx": hom_kok,
        "tone_on_kokoro_subset": hom_tone_same,
        "examples": [{"text": s, "cloak": c} for s, c in pairs[:5]],
    }


def targets(cer_result: dict, homophones: dict, enc_speed: dict) -> dict:
    return {
        "cer_mean_le_0.15_vs_speakable": cer_result["meets_target_vs_speakable"],
        "cer_mean_le_0.15_vs_text": cer_result["meets_target_vs_text"],
        "homophone_closer_than_other_kokoro": homophones["kokoro-onnx"]["cloak_sounds_closer"],
        "homophone_closer_than_other_tone": homophones["tone"]["cloak_sounds_closer"],
        "encoder_trimmed_ge_5x_faster_3s": enc_speed["cropped_3s"]["meets_target"],
        "encoder_trimmed_ge_5x_faster_natural_length": enc_speed["natural_length"]["meets_target"],
    }


def summary_rows(result: dict) -> list[tuple[str, str, str]]:
    c, speed = result["cer"], result["speed"]
    hom_tone, hom_kok = result["homophones"]["tone"], result["homophones"]["kokoro-onnx"]
    rtf, enc_speed, tone_speed = speed["kokoro_tts"], speed["whisper_encoder"], speed["tone_tts"]
    return [
        ("CER vs speakable (mean / median)",
         f"{c['cer_vs_speakable']['mean']:.3f} / {c['cer_vs_speakable']['median']:.3f}",
         f"n={c['n_sentences']}, target <= {CER_TARGET}: {c['meets_target_vs_speakable']}"),
        ("CER vs text (mean / median)", f"{c['cer_vs_text']['mean']:.3f} / {c['cer_vs_text']['median']:.3f}",
         f"target: {c['meets_target_vs_text']}"),
        ("CER both speakable (mean / median)",
         f"{c['cer_both_speakable']['mean']:.3f} / {c['cer_both_speakable']['median']:.3f}",
         "hypothesis digits/Latin read as the reference's"),
        ("tone: cos cloak / other / margin",
         f"{hom_tone['cos_cloak_mean']:.4f} / {hom_tone['cos_other_mean']:.4f} / {hom_tone['margin']:+.4f}",
         f"n={hom_tone['n_pairs']}, centred margin {hom_tone['centred']['margin']:+.3f}"),
        ("kokoro: cos cloak / other / margin",
         f"{hom_kok['cos_cloak_mean']:.4f} / {hom_kok['cos_other_mean']:.4f} / {hom_kok['margin']:+.4f}",
         f"n={hom_kok['n_pairs']}, centred margin {hom_kok['centred']['margin']:+.3f}"),
        ("Kokoro RTF (synth s / audio s)", f"{rtf['rtf']:.3f}", f"n={rtf['n_sentences']}"),
        *[(f"encoder s/utt trim/pad ({name})",
           f"{e['trimmed_s_per_utterance']:.3f} / {e['padded_s_per_utterance']:.3f}",
           (f"speedup {e['speedup_total']:.1f}x (>= 5: {e['meets_target']}), "
            f"n={e['n_utterances']}, {e['utterance_s']['mean']:.1f} s avg"))
          for name, e in enc_speed.items() if isinstance(e, dict)],
        *[(f"cosine trimmed vs padded ({name})", f"{e['cosine_trimmed_vs_padded']['mean']:.4f}",
           f"min {e['cosine_trimmed_vs_padded']['min']:.4f}")
          for name, e in enc_speed.items() if isinstance(e, dict)],
        ("tone synthesis", f"{tone_speed['posts_per_s']:.1f} posts/s", f"n={tone_speed['n_posts']}"),
    ]


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "speech.json", cold=True, weights=True)
    ap.add_argument("--quick", action="store_true", help="smaller sizes (smoke run)")
    ap.add_argument("--kokoro-pairs", type=int, default=None,
                    help="homophone pairs spoken by Kokoro (default 60, --quick 10)")
    ap.add_argument("--time-budget", type=float, default=570.0,
                    help="seconds after which the Kokoro homophone stage stops adding pairs")
    args = ap.parse_args()
    whisper_ckpt, kokoro_onnx = weight_files(ap, args.weights, "whisper-base.pt", "kokoro/kokoro-v1.0.int8.onnx")
    n_cer, n_hom, n_speed = (10, 40, 5) if args.quick else (50, 200, 20)
    start = time.monotonic()
    import torch

    torch.set_num_threads(2)
    import whisper

    from speech import make_backend, speakable

    info = {**machine_info(("torch", "onnxruntime", "openai-whisper", "numpy", "librosa", "misaki", "opencc")),
            "torch_threads": torch.get_num_threads()}
    log(f"machine: {info['cpu_count']} cpus, {info['cpu_model']}, load {info['loadavg_at_start']}")
    posts = [r for r in cold_records(args.cold, "test") if MIN_CHARS <= len(r["text"]) <= MAX_CHARS]
    log(f"COLD test posts with {MIN_CHARS}-{MAX_CHARS} chars: {len(posts)}")
    model, load_whisper_s = timed(lambda: whisper.load_model(str(whisper_ckpt), device="cpu"))
    kokoro, load_kokoro_s = timed(lambda: Synth(make_backend("kokoro-onnx", model=str(kokoro_onnx), voice=VOICE)))
    tone = Synth(make_backend("tone"))

    log(f"1. CER: {n_cer} posts, kokoro-onnx -> whisper-base")  # its syntheses also give Kokoro's real-time factor
    cer_result, rtf = stage_cer(posts, kokoro, model, Normaliser(), speakable, n_cer)
    log(f"   mean CER vs speakable {cer_result['cer_vs_speakable']['mean']:.3f}, "
        f"vs text {cer_result['cer_vs_text']['mean']:.3f}; Kokoro RTF {rtf['rtf']:.3f}")
    log(f"3. encoder speed: {n_speed} utterances, trimmed vs padded")  # on the CER utterances nearest 3 s
    enc_speed = stage_encoder_speed(kokoro, [p["text"] for p in posts[:n_cer]], model, n_speed)
    tone_speed = stage_tone_speed(tone, [p["text"] for p in posts[:n_hom]])
    log(f"   tone: {tone_speed['posts_per_s']:.1f} posts/s")
    homophones = homophone_figures(posts, n_hom, args.kokoro_pairs or (10 if args.quick else 60), tone, kokoro,
                                   model, start + args.time_budget)
    result = {
        "benchmark": "speech", "machine": info,
        "weights": {"whisper": str(whisper_ckpt), "kokoro": str(kokoro_onnx), "voice": VOICE},
        "selection": f"COLD test.csv in file order, posts with {MIN_CHARS} <= len(text) <= {MAX_CHARS}",
        "quick": args.quick, "load_s": {"whisper": load_whisper_s, "kokoro": load_kokoro_s},
        "cer": cer_result, "homophones": homophones,
        "speed": {"kokoro_tts": rtf, "whisper_encoder": enc_speed, "tone_tts": tone_speed},
        "targets": targets(cer_result, homophones, enc_speed), "total_s": time.monotonic() - start}
    write_result(args.out, result, indent=2)
    print_summary(summary_rows(result), args.out, result["total_s"], 28)


if __name__ == "__main__":
    main()
