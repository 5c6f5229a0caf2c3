"""Whisper encoder features of speech, trimmed to the utterance (MMBERT §3.2).

Whisper's encoder is built for 30 s windows: ``pad_or_trim`` pads a 3 s post with 27 s of silence and
the encoder then attends over 1,500 frames, 150 of them speech. ``mode="trimmed"`` (the default)
encodes only the utterance's own frames, slicing the positional embedding to their number — about
ten times less work for a 3 s post. ``mode="padded"`` runs the 30 s window as Whisper does and keeps
the utterance's frames, for comparison. The two are not interchangeable: without the silent tail to
attend to, trimmed frames differ (cosine about 0.92 per frame on Whisper base, ``bench/speech.py``),
so a model must be trained and used with the same mode — the cache key includes it.

Features are cached by (audio hash, model, mode) as safetensors files, float16.
"""
from __future__ import annotations

import os

import numpy as np

from cloak.common.models import loading_model

from .cache import _Store, audio_hash, content_key

WHISPER_RATE = 16000
MODES = ("trimmed", "padded")


def resample(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Float32 audio at Whisper's 16 kHz (librosa)."""
    if sample_rate == WHISPER_RATE:
        return np.asarray(audio, dtype=np.float32)
    import librosa

    return librosa.resample(np.asarray(audio, dtype=np.float32), orig_sr=sample_rate,
                            target_sr=WHISPER_RATE).astype(np.float32)


# A Whisper of random weights, 64 wide with 2 encoder layers, the same on every machine: no download,
# so the ``tiny`` preset runs offline (its speech features carry no meaning: for tests and smoke runs).
RANDOM_TINY = "random-tiny"


def random_tiny_whisper():
    import torch
    import whisper

    dims = whisper.model.ModelDimensions(n_mels=80, n_audio_ctx=1500, n_audio_state=64, n_audio_head=4,
                                         n_audio_layer=2, n_vocab=51865, n_text_ctx=448, n_text_state=64,
                                         n_text_head=4, n_text_layer=1)
    with torch.random.fork_rng():  # seeded without touching the caller's random stream
        torch.manual_seed(0)
        return whisper.model.Whisper(dims)


class WhisperEncoder:
    """The encoder of an openai-whisper model: a name (``base``), a checkpoint path, ``random-tiny``, or a
    model."""

    def __init__(self, model="base", mode: str = "trimmed", device: str = "cpu") -> None:
        import torch
        import whisper

        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        if isinstance(model, str):
            self.name = os.path.basename(model) if os.path.isfile(model) else model
            if model == RANDOM_TINY:
                model = random_tiny_whisper()
            else:
                with loading_model("Whisper model", model, hint="give a checkpoint (--whisper FILE.pt), or "
                                   f"{RANDOM_TINY} for random weights"):
                    model = whisper.load_model(model, device=device)
        else:
            self.name = f"whisper-{model.dims.n_audio_state}x{model.dims.n_audio_layer}"
        self.model = model.float().eval()
        self.mode, self.device, self._torch, self._whisper = mode, device, torch, whisper
        self.dim = model.dims.n_audio_state

    @property
    def cache_key(self) -> str:
        return f"{self.name}:{self.mode}"

    def encode(self, audio: np.ndarray) -> np.ndarray:
        """(frames, dim) float32 features of 16 kHz audio; 50 frames a second, at most 1,500."""
        torch, whisper = self._torch, self._whisper
        dims = self.model.dims
        samples = whisper.audio.N_SAMPLES
        audio = torch.from_numpy(np.asarray(audio, dtype=np.float32)[:samples])
        n_frames = max(1, (len(audio) // whisper.audio.HOP_LENGTH + 1) // 2)  # after conv2's stride 2
        encoder = self.model.encoder
        with torch.no_grad():
            if self.mode == "padded":
                mel = whisper.log_mel_spectrogram(whisper.pad_or_trim(audio), dims.n_mels)
                return encoder(mel[None].to(self.device))[0, :n_frames].cpu().numpy()
            mel = whisper.log_mel_spectrogram(audio, dims.n_mels)[None].to(self.device)
            x = torch.nn.functional.gelu(encoder.conv1(mel))
            x = torch.nn.functional.gelu(encoder.conv2(x)).permute(0, 2, 1)
            x = x[:, :dims.n_audio_ctx]
            x = x + encoder.positional_embedding[:x.shape[1]]
            for block in encoder.blocks:
                x = block(x)
            return encoder.ln_post(x)[0].cpu().numpy()


class FeatureCache(_Store):
    """Encoder features by (audio, encoder), float16 safetensors."""

    def __init__(self, root: str | os.PathLike) -> None:
        super().__init__(root, ".safetensors")
        self.hits = self.misses = 0

    def key(self, encoder: WhisperEncoder, audio: np.ndarray, sample_rate: int) -> str:
        return content_key(encoder.cache_key, audio_hash(audio, sample_rate))

    def get(self, key: str) -> np.ndarray:
        from safetensors.numpy import load_file

        return load_file(self.path(key))["features"].astype(np.float32)

    def features(self, encoder: WhisperEncoder, audio: np.ndarray, sample_rate: int) -> tuple[str, np.ndarray]:
        """(key, features) of one waveform, encoded only if the cache does not hold it."""
        from safetensors.numpy import save

        key = self.key(encoder, audio, sample_rate)
        if key in self:
            self.hits += 1
            return key, self.get(key)
        self.misses += 1
        feats = encoder.encode(resample(audio, sample_rate))
        self._commit(key, save({"features": feats.astype(np.float16)}))
        return key, self.get(key)
