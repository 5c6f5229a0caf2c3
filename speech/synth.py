"""Speak a corpus (and encode it): the engine of ``cloak speak`` and ``cloak synth``.

Audio and features land in content-addressed caches under the output folder (``audio/``,
``features/``), so an interrupted run picks up where it stopped: a rerun finds the finished entries
and only synthesises the rest. ``index.jsonl`` maps each record to its entries:
``{"id", "audio", "seconds", "sample_rate"[, "features", "frames"]}``; ids must be unique in the input
(a cloak's variant tells it from its source). Records stream through in batches, so memory does not
grow with the corpus.
"""
from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Iterator

from cloak.common.progress import progress_bar

from cloak.common.io import AtomicWriter, batched, check_files, check_records, count_lines, dump_record, read_records
from cloak.common.workers import ordered_map, threads_per_worker

from .cache import AudioCache
from .tts import make_backend

BATCH = 16

_worker: tuple | None = None


def _init(backend_args: dict, audio_dir: str) -> None:
    global _worker
    _worker = (make_backend(**backend_args), AudioCache(audio_dir))


def _speak(texts: list[str]) -> list[tuple[str, float, int, bool]]:
    backend, cache = _worker  # type: ignore[misc]
    return [(key, len(audio) / backend.sample_rate, backend.sample_rate, cached)
            for key, audio, cached in cache.synthesize(backend, texts)]


def _spoken(batches: Iterator[list[dict]], text_field: str, workers: int, backend_args: dict,
            audio_dir: str) -> Iterator[tuple[list[dict], list]]:
    """(records, their speech) batch by batch, in input order; a bounded number of batches in flight."""
    if workers <= 1:
        _init(backend_args, audio_dir)
        for batch in batches:
            yield batch, _speak([r[text_field] for r in batch])
        return
    threads = threads_per_worker(workers)
    in_flight: deque = deque()  # the batches whose speech is on its way, in order

    def texts() -> Iterator[list[str]]:
        for batch in batches:
            in_flight.append(batch)
            yield [r[text_field] for r in batch]

    for spoken in ordered_map(_speak, texts(), workers, _init, ({**backend_args, "threads": threads}, audio_dir),
                              "spawn"):
        yield in_flight.popleft(), spoken


def speak_file(in_path: str, out_dir: str, backend_args: dict, *, workers: int = 1,
               encoder=None, text_field: str = "text", progress: bool | None = None) -> dict:
    """TTS for every record (and Whisper features with ``encoder``); returns counts.

    backend_args: keyword arguments of ``speech.make_backend`` (``name``, ``model``, ``voice``,
    ``speed``, ``max_chars``).
    """
    check_records(in_path, text_field=text_field, unique_ids=True)  # parsing is ~1% of the cost of speech
    os.makedirs(out_dir, exist_ok=True)
    index_path = os.path.join(out_dir, "index.jsonl")
    check_files([in_path], [index_path])  # the input may not be the index written here
    audio_dir = os.path.join(out_dir, "audio")
    features = None
    if encoder is not None:
        from .features import FeatureCache

        features = FeatureCache(os.path.join(out_dir, "features"))
    audio_cache = AudioCache(audio_dir)
    counts = {"records": 0, "seconds_of_speech": 0.0, "synthesised": 0, "cached": 0}
    records = (r for _, r in read_records(in_path, text_field=text_field, unique_ids=True))
    total = count_lines(in_path) if in_path != "-" else None
    spoken = _spoken(batched(records, BATCH), text_field, workers, backend_args, audio_dir)
    with AtomicWriter(index_path) as index, contextlib.closing(spoken), \
            progress_bar(total=total, unit="post", desc="cloak speak", progress=progress) as bar:
        for batch, results in spoken:
            for record, (key, seconds, rate, cached) in zip(batch, results):
                entry = {"id": record.get("id", counts["records"]), "audio": key, "seconds": round(seconds, 3),
                         "sample_rate": rate}
                if features is not None:
                    audio, sr = audio_cache.get(key)
                    feature_key, feats = features.features(encoder, audio, sr)
                    entry.update(features=feature_key, frames=len(feats))
                index.write(dump_record(entry))
                counts["records"] += 1
                counts["seconds_of_speech"] += seconds
                counts["cached" if cached else "synthesised"] += 1
            bar.update(len(batch))
    counts["seconds_of_speech"] = round(counts["seconds_of_speech"], 1)
    if features is not None:
        counts.update(features_encoded=features.misses, features_cached=features.hits)
    return counts
