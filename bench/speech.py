"""Benchmark of ``speech``: Kokoro TTS intelligibility, homophone similarity in Whisper space, and speed.

Run from the repository root, with real weights assembled by ``shared/models/offline_weights.py``::

    python /work/shared/models/offline_weights.py /tmp/weights
    .venv/bin/python bench/speech.py --weights /tmp/weights          # full run (~10 min on 2 cores)
    .venv/bin/python bench/speech.py --weights /tmp/weights --quick  # smoke run

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

import argparse
import json
import os
import random
import sys
import time
import unicodedata
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.machine import machine_info  # noqa: E402
from bench.summary import print_summary  # noqa: E402

CER_TARGET = 0.15
SPEEDUP_TARGET = 5.0
MIN_CHARS, MAX_CHARS = 8, 40
VOICE = "zf_xiaobei"


# ---------------------------------------------------------------------------------------------- utils

def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def machine_info_speech() -> dict:
    import torch

    info = machine_info(("torch", "onnxruntime", "openai-whisper", "numpy", "librosa", "misaki", "opencc"))
    info["torch_threads"] = torch.get_num_threads()
    return info


def levenshtein(a: str, b: str) -> int:
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


class Normaliser:
    """Letters and digits only, lower-cased, simplified Chinese."""

    def __init__(self) -> None:
        import opencc

        self.cc = opencc.OpenCC("t2s.json")

    def __call__(self, text: str) -> str:
        text = self.cc.convert(text)
        return "".join(ch for ch in text.lower() if unicodedata.category(ch)[0] in "LN")


def cer(ref: str, hyp: str) -> float:
    if not ref:
        return float(bool(hyp))
    return levenshtein(ref, hyp) / len(ref)


def pooled(feats: np.ndarray) -> np.ndarray:
    return feats.mean(axis=0).astype(np.float64)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-12))


def derangement(n: int, seed: int = 0) -> list[int]:
    rng = random.Random(seed)
    while True:
        perm = list(range(n))
        rng.shuffle(perm)
        if all(i != p for i, p in enumerate(perm)):
            return perm


def summary(xs: list[float]) -> dict:
    return {"mean": float(np.mean(xs)), "median": float(np.median(xs)), "min": float(np.min(xs)),
            "max": float(np.max(xs)), "n": len(xs)}


# -------------------------------------------------------------------------------------- the stages

class Synth:
    """A backend with an in-memory cache of (text -> audio, synthesis seconds)."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.cache: dict[str, tuple[np.ndarray, float]] = {}

    def __call__(self, text: str) -> np.ndarray:
        if text not in self.cache:
            t0 = time.perf_counter()
            audio = self.backend.synthesize([text])[0]
            self.cache[text] = (audio, time.perf_counter() - t0)
        return self.cache[text][0]

    def seconds(self, text: str) -> float:
        return self.cache[text][1]


def stage_cer(posts, synth: Synth, model, norm, speakable, n: int) -> tuple[dict, dict]:
    import whisper  # noqa: F401  (model is a whisper model)

    from speech.features import resample

    texts = [p["text"] for p in posts[:n]]
    synth("你好，今天天气很好。")  # warm-up, untimed
    rows, synth_s, audio_s = [], 0.0, 0.0
    for i, text in enumerate(texts):
        audio = synth(text)
        sr = synth.backend.sample_rate
        synth_s += synth.seconds(text)
        audio_s += len(audio) / sr
        audio16 = resample(audio, sr)
        t0 = time.perf_counter()
        hyp = model.transcribe(audio16, language="zh", fp16=False, temperature=0.0)["text"]
        asr_s = time.perf_counter() - t0
        spoken = speakable(text)
        h = norm(hyp)
        row = {"index": i, "text": text, "speakable": spoken, "hyp": hyp.strip(), "hyp_norm": h,
               "audio_s": round(len(audio) / sr, 3), "synth_s": round(synth.seconds(text), 3),
               "asr_s": round(asr_s, 3),
               "cer_text": cer(norm(text), h), "cer_speakable": cer(norm(spoken), h),
               "cer_both_speakable": cer(norm(spoken), norm(speakable(hyp)))}
        rows.append(row)
        if (i + 1) % 10 == 0:
            log(f"  CER {i + 1}/{len(texts)}: running mean (speakable) "
                f"{np.mean([r['cer_speakable'] for r in rows]):.3f}")
    c_text = [r["cer_text"] for r in rows]
    c_spk = [r["cer_speakable"] for r in rows]
    # corpus-level CER too (total edits / total reference chars)
    corpus_spk = sum(levenshtein(norm(r["speakable"]), r["hyp_norm"]) for r in rows) / \
        max(1, sum(len(norm(r["speakable"])) for r in rows))
    worst = sorted(rows, key=lambda r: -r["cer_speakable"])[:5]
    result = {
        "n_sentences": len(rows),
        "backend": synth.backend.cache_key,
        "asr": "whisper-base.pt, transcribe(language='zh', fp16=False, temperature=0.0): greedy, no "
               "temperature fallback (deterministic; the fallback's sampling at best_of=5 took up to 20 s "
               "per utterance here)",
        "normalisation": "OpenCC t2s on both sides, keep Unicode letters/digits only, lower-case",
        "cer_vs_speakable": summary(c_spk),
        "cer_vs_text": summary(c_text),
        "cer_both_speakable": summary([r["cer_both_speakable"] for r in rows]),
        "cer_both_speakable_note": "hypothesis also through speakable(), so Whisper's Arabic digits "
                                   "(512) match the reference's 五一二",
        "corpus_cer_vs_speakable": corpus_spk,
        "share_cer_zero_vs_speakable": float(np.mean([c == 0 for c in c_spk])),
        "target_mean_cer": CER_TARGET,
        "meets_target_vs_speakable": bool(np.mean(c_spk) <= CER_TARGET),
        "meets_target_vs_text": bool(np.mean(c_text) <= CER_TARGET),
        "worst5": [{k: r[k] for k in ("text", "speakable", "hyp", "cer_speakable", "cer_text")} for r in worst],
        "mean_asr_s_per_utterance": float(np.mean([r["asr_s"] for r in rows])),
        "rows": rows,
    }
    rtf = {"n_sentences": len(rows), "synth_s": synth_s, "audio_s": audio_s, "rtf": synth_s / audio_s,
           "rtf_first20": (sum(r["synth_s"] for r in rows[:20]) / sum(r["audio_s"] for r in rows[:20])),
           "mean_audio_s": audio_s / len(rows), "warmup": 1,
           "onnx_intra_op_threads": os.cpu_count()}
    return result, rtf


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


def similarity(feats_src: list[np.ndarray], feats_cloak: list[np.ndarray], perm: list[int]) -> dict:
    ps = np.stack([pooled(f) for f in feats_src])
    pc = np.stack([pooled(f) for f in feats_cloak])
    n = len(ps)
    same = [cosine(ps[i], pc[i]) for i in range(n)]
    other = [cosine(ps[i], ps[perm[i]]) for i in range(n)]
    mu = np.concatenate([ps, pc]).mean(0)
    cs = [cosine(ps[i] - mu, pc[i] - mu) for i in range(n)]
    co = [cosine(ps[i] - mu, ps[perm[i]] - mu) for i in range(n)]
    return {
        "n_pairs": n,
        "cos_cloak_mean": float(np.mean(same)), "cos_other_mean": float(np.mean(other)),
        "margin": float(np.mean(same) - np.mean(other)),
        "cos_cloak_median": float(np.median(same)), "cos_other_median": float(np.median(other)),
        "share_cloak_nearer": float(np.mean([s > o for s, o in zip(same, other)])),
        "centred": {"cos_cloak_mean": float(np.mean(cs)), "cos_other_mean": float(np.mean(co)),
                    "margin": float(np.mean(cs) - np.mean(co))},
        "cloak_sounds_closer": bool(np.mean(same) > np.mean(other)),
    }


def stage_homophones(pairs, synth: Synth, encoder, limit: int | None = None,
                     deadline: float | None = None) -> tuple[dict, int]:
    from speech.features import resample

    sr = synth.backend.sample_rate
    fs, fc = [], []
    for k, (src, clk) in enumerate(pairs[:limit] if limit else pairs):
        if deadline is not None and time.monotonic() > deadline and len(fs) >= 10:
            log(f"  time budget spent: stopping at {len(fs)} pairs")
            break
        fs.append(encoder.encode(resample(synth(src), sr)))
        fc.append(encoder.encode(resample(synth(clk), sr)))
        if (k + 1) % 20 == 0:
            log(f"  {synth.backend.name}: {k + 1} pairs")
    perm = derangement(len(fs), seed=0)
    return similarity(fs, fc, perm), len(fs)


# ----------------------------------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--weights", default=os.environ.get("MMCLOAK_WEIGHTS"),
                        help="folder made by shared/models/offline_weights.py (default: $MMCLOAK_WEIGHTS)")
    parser.add_argument("--cold", default=str(REPO.parent / "shared" / "data" / "cold"))
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "speech.json"))
    parser.add_argument("--quick", action="store_true", help="smaller sizes (smoke run)")
    parser.add_argument("--kokoro-pairs", type=int, default=None,
                        help="homophone pairs spoken by Kokoro (default 60, --quick 10)")
    parser.add_argument("--time-budget", type=float, default=570.0,
                        help="seconds after which the Kokoro homophone stage stops adding pairs")
    args = parser.parse_args(argv)

    if not args.weights:
        parser.error("no weights: pass --weights DIR or set MMCLOAK_WEIGHTS; assemble them with "
                     "`python /work/shared/models/offline_weights.py DIR`")
    weights = Path(args.weights)
    whisper_ckpt = weights / "whisper-base.pt"
    kokoro_onnx = weights / "kokoro" / "kokoro-v1.0.int8.onnx"
    for path in (whisper_ckpt, kokoro_onnx):
        if not path.is_file():
            parser.error(f"{path} not found; assemble the weights with "
                         f"`python /work/shared/models/offline_weights.py {weights}`")
    test_csv = Path(args.cold) / "test.csv"
    if not test_csv.is_file():
        parser.error(f"COLD test file not found: {test_csv}")

    n_cer = 10 if args.quick else 50
    n_hom = 40 if args.quick else 200
    n_kok = args.kokoro_pairs or (10 if args.quick else 60)
    n_speed = 5 if args.quick else 20

    start = time.monotonic()
    import torch

    torch.set_num_threads(2)
    import whisper

    from cloak import Perturber
    from cloak.convert import read_dataset
    from speech import make_backend, speakable
    from speech.features import WhisperEncoder

    info = machine_info_speech()
    log(f"machine: {info['cpu_count']} cpus, {info['cpu_model']}, load {info['loadavg_at_start']}")

    posts = [r for r in read_dataset("cold", str(test_csv)) if MIN_CHARS <= len(r["text"]) <= MAX_CHARS]
    log(f"COLD test posts with {MIN_CHARS}-{MAX_CHARS} chars: {len(posts)}")

    t0 = time.perf_counter()
    model = whisper.load_model(str(whisper_ckpt), device="cpu")
    load_whisper_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    kokoro = Synth(make_backend("kokoro-onnx", model=str(kokoro_onnx), voice=VOICE))
    load_kokoro_s = time.perf_counter() - t0
    tone = Synth(make_backend("tone"))
    norm = Normaliser()

    # 1. CER (its syntheses also give the Kokoro real-time factor)
    log(f"1. CER: {n_cer} posts, kokoro-onnx -> whisper-base")
    cer_result, rtf = stage_cer(posts, kokoro, model, norm, speakable, n_cer)
    log(f"   mean CER vs speakable {cer_result['cer_vs_speakable']['mean']:.3f}, "
        f"vs text {cer_result['cer_vs_text']['mean']:.3f}; Kokoro RTF {rtf['rtf']:.3f}")

    # 3. Speed (encoder), on the CER utterances nearest 3 s
    log(f"3. encoder speed: {n_speed} utterances, trimmed vs padded")
    enc_speed = stage_encoder_speed(kokoro, [p["text"] for p in posts[:n_cer]], model, n_speed)
    for name in ("cropped_3s", "natural_length"):
        e = enc_speed[name]
        log(f"   {name}: trimmed {e['trimmed_s_per_utterance']:.3f} s, padded "
            f"{e['padded_s_per_utterance']:.3f} s, speedup {e['speedup_total']:.1f}x, "
            f"cosine {e['cosine_trimmed_vs_padded']['mean']:.4f}")

    # tone speed
    tone_texts = [p["text"] for p in posts[:n_hom]]
    tone.backend.synthesize(tone_texts[:5])  # warm-up (pinyin tables)
    t0 = time.perf_counter()
    tone_audio = tone.backend.synthesize(tone_texts)
    tone_s = time.perf_counter() - t0
    tone_speed = {"n_posts": len(tone_texts), "seconds": tone_s, "posts_per_s": len(tone_texts) / tone_s,
                  "audio_s_per_post": float(np.mean([len(a) for a in tone_audio])) / tone.backend.sample_rate}
    log(f"   tone: {tone_speed['posts_per_s']:.1f} posts/s")

    # 2. Homophones
    perturber = Perturber(ops="homophone", targets="all", rate=0.5, seed=0)
    pairs_all = [(i, p["text"], perturber(p["text"], key=i)) for i, p in enumerate(posts[:n_hom])]
    pairs = [(src, c.text) for i, src, c in pairs_all if c.changed and speakable(c.text) != speakable(src)]
    n_changed = sum(c.changed for _, _, c in pairs_all)
    log(f"2. homophones: {len(pairs)}/{n_hom} posts changed")
    encoder = WhisperEncoder(model, mode="trimmed")
    hom_tone, _ = stage_homophones(pairs, tone, encoder)
    log(f"   tone: cloak {hom_tone['cos_cloak_mean']:.4f} vs other {hom_tone['cos_other_mean']:.4f}")
    deadline = start + args.time_budget
    hom_kok, n_k = stage_homophones(pairs, kokoro, encoder, limit=n_kok, deadline=deadline)
    log(f"   kokoro ({n_k} pairs): cloak {hom_kok['cos_cloak_mean']:.4f} vs other {hom_kok['cos_other_mean']:.4f}")
    hom_tone_same, _ = stage_homophones(pairs, tone, encoder, limit=n_k)  # tone on Kokoro's subset
    homophones = {
        "perturber": repr(perturber),
        "n_posts": n_hom, "n_changed": n_changed, "n_pairs_used": len(pairs),
        "features": "whisper-base encoder, mode=trimmed, mean over frames",
        "derangement": "random.Random(0) shuffle, redrawn until no fixed point; cos(post_i, post_perm[i])",
        "tone": hom_tone,
        "kokoro-onnx": hom_kok,
        "tone_on_kokoro_subset": hom_tone_same,
        "examples": [{"text": s, "cloak": c} for s, c in pairs[:5]],
    }

    total_s = time.monotonic() - start
    result = {
        "benchmark": "speech",
        "machine": info,
        "weights": {"whisper": str(whisper_ckpt), "kokoro": str(kokoro_onnx), "voice": VOICE},
        "selection": f"COLD test.csv in file order, posts with {MIN_CHARS} <= len(text) <= {MAX_CHARS}",
        "quick": args.quick,
        "load_s": {"whisper": load_whisper_s, "kokoro": load_kokoro_s},
        "cer": cer_result,
        "homophones": homophones,
        "speed": {"kokoro_tts": rtf, "whisper_encoder": enc_speed, "tone_tts": tone_speed},
        "targets": {
            "cer_mean_le_0.15_vs_speakable": cer_result["meets_target_vs_speakable"],
            "cer_mean_le_0.15_vs_text": cer_result["meets_target_vs_text"],
            "homophone_closer_than_other_kokoro": hom_kok["cloak_sounds_closer"],
            "homophone_closer_than_other_tone": hom_tone["cloak_sounds_closer"],
            "encoder_trimmed_ge_5x_faster_3s": enc_speed["cropped_3s"]["meets_target"],
            "encoder_trimmed_ge_5x_faster_natural_length": enc_speed["natural_length"]["meets_target"],
        },
        "total_s": total_s,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    c = cer_result
    rows = [
        ("CER vs speakable (mean / median)", f"{c['cer_vs_speakable']['mean']:.3f} / {c['cer_vs_speakable']['median']:.3f}",
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
    print_summary(rows, out, total_s, 28)
    return 0


if __name__ == "__main__":
    sys.exit(main())
