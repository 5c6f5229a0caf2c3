"""The speech benchmarks' measures (``bench.speech``, ``bench.speech_backends``): not a benchmark itself.

A post spoken by a TTS backend and transcribed back by Whisper (character error rate against what the
backend reads), and a post and its homophone cloak through Whisper's encoder (cosine of the two against
the post and another post).
"""
from __future__ import annotations

import os
import random
import time
import unicodedata

import numpy as np

from bench.common import log

CER_TARGET = 0.15
MIN_CHARS, MAX_CHARS = 8, 40  # a few seconds of speech
VOICE = "zf_xiaobei"


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


def transcribed(index: int, text: str, synth: Synth, model, norm, speakable) -> dict:
    """A post spoken by ``synth`` and transcribed back by the Whisper ``model``: its CERs and timings."""
    from speech.features import resample

    audio = synth(text)
    sr = synth.backend.sample_rate
    t0 = time.perf_counter()
    hyp = model.transcribe(resample(audio, sr), language="zh", fp16=False, temperature=0.0)["text"]
    asr_s = time.perf_counter() - t0
    spoken = speakable(text)
    h = norm(hyp)
    return {"index": index, "text": text, "speakable": spoken, "hyp": hyp.strip(), "hyp_norm": h,
            "audio_s": round(len(audio) / sr, 3), "synth_s": round(synth.seconds(text), 3),
            "asr_s": round(asr_s, 3),
            "cer_text": cer(norm(text), h), "cer_speakable": cer(norm(spoken), h),
            "cer_both_speakable": cer(norm(spoken), norm(speakable(hyp)))}


def stage_cer(posts, synth: Synth, model, norm, speakable, n: int) -> tuple[dict, dict]:
    """CER of the first ``n`` posts through ``synth`` and Whisper, and the backend's real-time factor."""
    texts = [p["text"] for p in posts[:n]]
    synth("你好，今天天气很好。")  # warm-up, untimed
    rows, synth_s, audio_s = [], 0.0, 0.0
    for i, text in enumerate(texts):
        rows.append(transcribed(i, text, synth, model, norm, speakable))
        synth_s += synth.seconds(text)
        audio_s += len(synth(text)) / synth.backend.sample_rate
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
