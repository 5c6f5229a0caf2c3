"""Content-addressed stores for audio and features, safe to share between worker processes.

An entry's key is a hash of what it depends on (backend, model, voice, speed and the text, for
audio; the audio's hash, model and mode, for features), so a cache never needs invalidating: a
different input is a different key. Entries are written to a temporary file and renamed, so two
workers writing the same entry, or a run killed half-way, never leave a broken file; a rerun finds
what is done and does only the rest.
"""
from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Sequence

import numpy as np

from cloak.common.io import write_atomic

from .text import speakable
from .tts import TTSBackend


def content_key(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


def audio_hash(audio: np.ndarray, sample_rate: int) -> str:
    return hashlib.sha256(np.ascontiguousarray(audio, dtype=np.float32).tobytes()
                          + str(sample_rate).encode()).hexdigest()


class _Store:
    def __init__(self, root: str | os.PathLike, suffix: str) -> None:
        self.root = os.fspath(root)
        self.suffix = suffix
        os.makedirs(self.root, exist_ok=True)

    def path(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key + self.suffix)

    def __contains__(self, key: str) -> bool:
        return os.path.exists(self.path(key))

    def _commit(self, key: str, data: bytes) -> str:
        path = self.path(key)
        write_atomic(path, data)
        return path


class AudioCache(_Store):
    """Waveforms by (backend settings, text), stored as compressed 16-bit PCM (.npz)."""

    def __init__(self, root: str | os.PathLike) -> None:
        super().__init__(root, ".npz")
        self.hits = self.misses = 0

    def key(self, backend: TTSBackend, text: str) -> str:
        # What is said, not what is written: a post longer than the backend speaks is keyed by its spoken
        # part as speakable() reads it, so a change to how text is read aloud cannot leave stale audio,
        # and posts that read alike (黑~人, 黑人) share one entry.
        return content_key(backend.cache_key, speakable(backend.spoken(text)))

    def get(self, key: str) -> tuple[np.ndarray, int]:
        with np.load(self.path(key)) as data:
            return data["pcm"].astype(np.float32) / 32767.0, int(data["sample_rate"])

    def put(self, key: str, audio: np.ndarray, sample_rate: int) -> str:
        pcm = (np.clip(audio, -1.0, 1.0) * 32767.0).round().astype(np.int16)
        buffer = io.BytesIO()
        np.savez_compressed(buffer, pcm=pcm, sample_rate=np.array(sample_rate))
        return self._commit(key, buffer.getvalue())

    def synthesize(self, backend: TTSBackend, texts: Sequence[str]) -> list[tuple[str, np.ndarray, bool]]:
        """(key, waveform, was cached) per text, synthesising only what the cache does not hold."""
        keys = [self.key(backend, t) for t in texts]
        missing = [i for i, k in enumerate(keys) if k not in self]
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        for i, audio in zip(missing, backend.synthesize([texts[i] for i in missing])):
            self.put(keys[i], audio, backend.sample_rate)
        new = set(missing)
        return [(k, self.get(k)[0], i not in new) for i, k in enumerate(keys)]
