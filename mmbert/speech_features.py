"""Speech inputs: pooled Whisper encoder frames of each post's synthetic speech.

Audio and encoder frames come from ``speech``'s content-addressed caches under one folder (the layout
``cloak synth`` writes: ``audio/``, ``features/``), so features ``cloak synth`` made ahead are found, and
whatever is missing is synthesised and encoded on demand and cached for next time.
"""
from __future__ import annotations

import functools
import math
import os
from collections.abc import Iterator

import numpy as np
from cloak.common.progress import progress_bar
from cloak.common.workers import ordered_map, threads_per_worker

from speech import AudioCache, TTSBackend, make_backend
from speech.features import FeatureCache, WhisperEncoder


def pool_frames(frames: np.ndarray, stride: int, max_tokens: int) -> np.ndarray:
    """Average-pool (frames, dim) in time, ``stride`` frames a token (more for long utterances, so that
    at most ``max_tokens`` remain): Whisper's 50 frames a second are far more than a post needs."""
    stride = max(stride, math.ceil(len(frames) / max_tokens))
    n = math.ceil(len(frames) / stride)
    padded = np.zeros((n * stride, frames.shape[1]), dtype=np.float32)
    padded[:len(frames)] = frames
    counts = np.minimum(stride, len(frames) - np.arange(n) * stride)[:, None]
    return (padded.reshape(n, stride, -1).sum(1) / counts).astype(np.float16)


@functools.lru_cache(maxsize=4)
def whisper_encoder(model: str, mode: str = "trimmed") -> WhisperEncoder:
    """One loaded encoder per (model, mode) in a process: building a model for a stage and then its
    featurizer, or evaluating several models, would otherwise load Whisper each time."""
    return WhisperEncoder(model, mode=mode)


_worker: "SpeechFeatures | None" = None  # a worker process's own, built once by _start_worker


def _start_worker(arguments: tuple, threads: int) -> None:
    global _worker
    import torch

    torch.set_num_threads(threads)
    _worker = SpeechFeatures(*arguments)


def _worker_features(texts: list[str]) -> list[np.ndarray]:
    return _worker.features(texts, progress=False)  # type: ignore[union-attr]


class SpeechFeatures:
    """``features(texts)`` -> per text, float16 (tokens, dim) pooled encoder frames of its speech."""

    def __init__(self, cache_dir: str | os.PathLike, backend: TTSBackend | dict, encoder: WhisperEncoder | str,
                 stride: int = 4, max_tokens: int = 64, whisper_mode: str = "trimmed") -> None:
        # what a worker process needs to build its own: a backend's settings and an encoder's name, not the
        # loaded models, which do not cross processes
        self._arguments = ((str(cache_dir), backend, encoder, stride, max_tokens, whisper_mode)
                           if isinstance(backend, dict) and isinstance(encoder, str) else None)
        self._backend = backend  # built on first use: loading a TTS model is slow and often not needed
        self.encoder = whisper_encoder(encoder, whisper_mode) if isinstance(encoder, str) else encoder
        self.audio = AudioCache(os.path.join(cache_dir, "audio"))
        self.frames = FeatureCache(os.path.join(cache_dir, "features"))
        self.stride, self.max_tokens = stride, max_tokens
        self._memory: dict[str, np.ndarray] = {}

    @property
    def backend(self) -> TTSBackend:
        if isinstance(self._backend, dict):
            self._backend = make_backend(**self._backend)
        return self._backend

    @property
    def dim(self) -> int:
        return self.encoder.dim

    def features(self, texts: list[str], batch_size: int = 16, progress: bool | None = None,
                 workers: int = 1) -> list[np.ndarray]:
        """``workers`` > 1 speaks and encodes in that many processes, each with its share of the cores:
        Whisper gains less from a second thread than from a second process (1.33x on 908 texts on 2 cores,
        ``bench.speech_workers``; starting the workers costs a few seconds). Each writes the shared caches,
        so what a stopped run finished is kept."""
        todo = sorted({t for t in texts if t not in self._memory})
        batches = [todo[start:start + batch_size] for start in range(0, len(todo), batch_size)]
        # Kokoro speaks a post in 2-3 s on a CPU: the bar moves post by post
        with progress_bar(total=len(todo), desc="speech (TTS + Whisper)", unit="post", progress=progress) as bar:
            for batch, pooled in zip(batches, self._pooled(batches, workers)):
                self._memory.update(zip(batch, pooled))
                bar.update(len(batch))
        return [self._memory[t] for t in texts]

    def _pooled(self, batches: list[list[str]], workers: int) -> Iterator[list[np.ndarray]]:
        """Each batch's pooled frames, in order, here or in ``workers`` processes."""
        if workers <= 1 or len(batches) <= 1:
            for batch in batches:
                yield [pool_frames(self.frames.features(self.encoder, audio, self.backend.sample_rate)[1],
                                   self.stride, self.max_tokens)
                       for _, audio, _ in self.audio.synthesize(self.backend, batch)]
            return
        if self._arguments is None:
            raise ValueError("speech in worker processes needs the TTS backend's settings (a dict) and the Whisper "
                             "encoder's name or path, not loaded models")
        threads = threads_per_worker(workers)
        yield from ordered_map(_worker_features, batches, workers, _start_worker, (self._arguments, threads), "spawn")
