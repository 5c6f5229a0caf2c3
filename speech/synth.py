"""Speak a corpus (and encode it): the engine of ``cloak speak`` and ``cloak synth``.

Audio and features land in content-addressed caches under the output folder (``audio/``,
``features/``), so an interrupted run picks up where it stopped: a rerun finds the finished entries
and only synthesises the rest. ``index.jsonl`` maps each record to its entries:
``{"id", "audio", "seconds", "sample_rate"[, "features", "frames"]}``.
"""
from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator

from tqdm import tqdm

from cloak.io import AtomicWriter, batched, dump_record, read_records

from .cache import AudioCache
from .tts import make_backend

BATCH = 16

_worker: tuple | None = None


def _init(backend_args: tuple, audio_dir: str) -> None:
    global _worker
    _worker = (make_backend(*backend_args), AudioCache(audio_dir))


def _speak(texts: list[str]) -> list[tuple[str, float, int, bool]]:
    backend, cache = _worker  # type: ignore[misc]
    return [(key, len(audio) / backend.sample_rate, backend.sample_rate, cached)
            for key, audio, cached in cache.synthesize(backend, texts)]


def _spoken(batches: Iterator[list[str]], workers: int, backend_args: tuple, audio_dir: str):
    if workers <= 1:
        _init(backend_args, audio_dir)
        yield from map(_speak, batches)
        return
    threads = max(1, len(os.sched_getaffinity(0)) // workers)  # workers x threads = the cores
    worker_args = (*backend_args, threads)
    with multiprocessing.get_context("spawn").Pool(workers, _init, (worker_args, audio_dir)) as pool:
        yield from pool.imap(_speak, batches)


def speak_file(in_path: str, out_dir: str, backend_args: tuple, *, workers: int = 1,
               encoder=None, text_field: str = "text", progress: bool | None = None) -> dict:
    """TTS for every record (and Whisper features with ``encoder``); returns counts."""
    os.makedirs(out_dir, exist_ok=True)
    audio_dir = os.path.join(out_dir, "audio")
    records = [r for _, r in read_records(in_path, text_field=text_field)]
    features = None
    if encoder is not None:
        from .features import FeatureCache

        features = FeatureCache(os.path.join(out_dir, "features"))
    audio_cache = AudioCache(audio_dir)
    counts = {"records": len(records), "seconds": 0.0, "synthesised": 0, "cached": 0}
    texts = batched((r[text_field] for r in records), BATCH)
    with AtomicWriter(os.path.join(out_dir, "index.jsonl")) as index, \
            tqdm(total=len(records), unit="post", desc="cloak speak", leave=False,
                 disable=progress is False or None) as bar:
        done = 0
        for results in _spoken(texts, workers, backend_args, audio_dir):
            for key, seconds, rate, cached in results:
                record = records[done]
                entry = {"id": record.get("id", done), "audio": key, "seconds": round(seconds, 3),
                         "sample_rate": rate}
                if features is not None:
                    audio, sr = audio_cache.get(key)
                    feature_key, feats = features.features(encoder, audio, sr)
                    entry.update(features=feature_key, frames=len(feats))
                index.write(dump_record(entry))
                counts["seconds"] += seconds
                counts["cached" if cached else "synthesised"] += 1
                done += 1
            bar.update(len(results))
    counts["seconds"] = round(counts["seconds"], 1)
    if features is not None:
        counts.update(features_encoded=features.misses, features_cached=features.hits)
    return counts
