"""Text-to-speech backends behind one interface: ``synthesize(texts) -> [waveform]`` at ``sample_rate``.

- ``tone``: a deterministic synthesiser that needs no weights, for tests and CI. Each toneless pinyin
  syllable gets a fixed timbre (two partials chosen from a hash of the syllable), each tone its pitch
  contour (1 high level, 2 rising, 3 dipping, 4 falling, 5 short neutral), so homophones sound alike
  and a toneless homophone differs only in its contour.
- ``kokoro-onnx``: Kokoro-82M through onnxruntime, from a local ``.onnx`` with its ``vocab.json`` and
  voice packs (``voices/NAME.npy`` or ``.pt``); Mandarin G2P by misaki[zh], as Kokoro itself does.
- ``kokoro``: the ``kokoro`` package on torch (``KPipeline(lang_code="z")``), model and voice by hub
  name or local path.
- ``espeak-ng``: eSpeak NG's Mandarin (voice ``cmn-latn-pinyin``), the ``espeak-ng`` program (Debian's package of
  that name). Formant synthesis: robotic, but about 100x faster than Kokoro on a CPU (20 ms a post
  against 2-3 s), for experiments that must speak tens of thousands of posts; no weights.

Every backend speaks ``speakable(text)`` (Latin, digits and emoji made Mandarin, see ``speech.text``)
of a post's first ``max_chars`` characters (500 by default), sentence by sentence, joined by a short
pause, so long posts never exceed a model's input limit.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Sequence

import numpy as np

from cloak.hanzi import is_han
from cloak.common.models import loading_model
from cloak.pinyin import word_reading

from . import BACKENDS
from .text import MAX_CHARS, sentences, speakable

PAUSE_S = 0.15
KOKORO_VOICE = "zf_xiaobei"
# eSpeak NG's plain "cmn" turns most characters into pinyin with tone digits and, finding no Mandarin
# rule for them, reads those in English ("bei two"); the latin-as-pinyin voice reads them as Mandarin.
ESPEAK_VOICE = "cmn-latn-pinyin"


class TTSBackend:
    """Base class: subclasses set ``name`` and ``sample_rate`` and implement ``_speak(sentence)``."""

    name = ""
    sample_rate = 16000
    max_chars = MAX_CHARS

    def spoken(self, text: str) -> str:
        """The part of a post that is spoken: its first ``max_chars`` characters."""
        return text[:self.max_chars]

    @property
    def cache_key(self) -> str:
        """What the audio depends on besides the text: backend, model, voice, speed."""
        raise NotImplementedError

    def _speak(self, sentence: str) -> np.ndarray:
        raise NotImplementedError

    def synthesize(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Float32 mono waveforms at ``sample_rate``, one per text."""
        pause = np.zeros(int(PAUSE_S * self.sample_rate), dtype=np.float32)
        out = []
        for text in texts:
            parts = [self._speak(s) for s in sentences(speakable(self.spoken(text)))]
            parts = [p for p in parts if p.size]
            joined = [x for p in parts for x in (p, pause)][:-1]
            out.append(np.concatenate(joined).astype(np.float32) if joined else pause.copy())
        return out


class ToneBackend(TTSBackend):
    """Pinyin syllables -> fixed tones. Deterministic, instant, no weights."""

    name = "tone"
    SYLLABLE_S = 0.22
    CONTOURS = {"1": (1.0, 1.0), "2": (0.8, 1.15), "3": (0.8, 0.7), "4": (1.2, 0.75), "5": (0.9, 0.9)}

    def __init__(self, sample_rate: int = 16000, speed: float = 1.0) -> None:
        self.sample_rate = sample_rate
        self.speed = speed

    @property
    def cache_key(self) -> str:
        return f"tone:sr={self.sample_rate}:speed={self.speed}"

    @staticmethod
    @functools.lru_cache(maxsize=4096)
    def _partials(base: str) -> tuple[float, float]:
        digest = hashlib.sha1(base.encode()).digest()
        return 140.0 + digest[0] * 0.6, 300.0 + digest[1] * 6.0  # voice-like pitch, a "formant"

    def _speak(self, sentence: str) -> np.ndarray:
        syllables = [s for run in _han_runs(sentence) for s in word_reading(run)]
        n = max(1, round(self.SYLLABLE_S / self.speed * self.sample_rate))
        t = np.arange(n, dtype=np.float64) / self.sample_rate
        envelope = np.sin(np.pi * np.arange(n) / n) ** 0.5
        pieces = []
        for syllable in syllables:
            base, tone = syllable.rstrip("012345"), (syllable[-1:] if syllable[-1:].isdigit() else "5")
            pitch, formant = self._partials(base)
            start, end = self.CONTOURS.get(tone, self.CONTOURS["5"])
            f = pitch * np.linspace(start, end, n)
            phase = 2 * np.pi * np.cumsum(f) / self.sample_rate
            wave = 0.6 * np.sin(phase) + 0.3 * np.sin(2 * np.pi * formant * t) * np.sin(phase / 2)
            pieces.append((wave * envelope).astype(np.float32))
        return np.concatenate(pieces) if pieces else np.zeros(0, np.float32)


def _han_runs(text: str) -> list[str]:
    runs, current = [], []
    for ch in text:
        if is_han(ch):
            current.append(ch)
        elif current:
            runs.append("".join(current))
            current = []
    if current:
        runs.append("".join(current))
    return runs


class KokoroOnnxBackend(TTSBackend):
    """Kokoro-82M (ONNX) with a Mandarin voice; 24 kHz."""

    name = "kokoro-onnx"
    sample_rate = 24000
    MAX_PHONEMES = 510

    def __init__(self, model: str, voice: str = KOKORO_VOICE, speed: float = 1.0,
                 vocab: str | None = None, voices_dir: str | None = None,
                 threads: int | None = None) -> None:
        if not os.path.isfile(model):
            raise FileNotFoundError(f"Kokoro ONNX model not found: {model}")
        folder = os.path.dirname(os.path.abspath(model))
        vocab = vocab or os.path.join(folder, "vocab.json")
        with open(vocab, encoding="utf-8") as f:
            data = json.load(f)
        self.vocab: dict[str, int] = data.get("vocab", data)
        self.voice_name = voice
        self.pack = _load_voice(voice, voices_dir or os.path.join(folder, "voices"))
        self.model_path, self.speed = model, speed
        import onnxruntime

        options = onnxruntime.SessionOptions()
        # Workers share the cores: each gets its share (the cores this process may use, by default).
        options.intra_op_num_threads = threads or len(os.sched_getaffinity(0))
        self.session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        self.g2p = _mandarin_g2p()

    @property
    def cache_key(self) -> str:
        size = os.path.getsize(self.model_path)
        return f"kokoro-onnx:{os.path.basename(self.model_path)}:{size}:{self.voice_name}:speed={self.speed}"

    def phonemes(self, sentence: str) -> str:
        result = self.g2p(sentence)
        phonemes = result[0] if isinstance(result, tuple) else result
        return "".join(p for p in phonemes if p in self.vocab)  # what Kokoro cannot say is dropped

    def _speak(self, sentence: str) -> np.ndarray:
        phonemes = self.phonemes(sentence)
        pieces = []
        for i in range(0, len(phonemes), self.MAX_PHONEMES):
            ids = [self.vocab[p] for p in phonemes[i:i + self.MAX_PHONEMES]]
            if not ids:
                continue
            style = self.pack[min(len(ids) - 1, len(self.pack) - 1)].reshape(1, -1)  # kokoro's convention
            audio = self.session.run(None, {
                "tokens": np.array([[0, *ids, 0]], dtype=np.int64),
                "style": style.astype(np.float32),
                "speed": np.array([self.speed], dtype=np.float32)})[0]
            pieces.append(np.asarray(audio, dtype=np.float32).reshape(-1))
        return np.concatenate(pieces) if pieces else np.zeros(0, np.float32)


def _mandarin_g2p():
    """misaki's Mandarin G2P (jieba segments for it: its dictionary-loading messages are kept out of
    the command's output)."""
    import logging

    import jieba
    from misaki import zh

    jieba.setLogLevel(logging.WARNING)
    return zh.ZHG2P()


def _load_voice(voice: str, voices_dir: str) -> np.ndarray:
    """A voice pack [510, 1, 256] from a file path or a name under ``voices_dir``."""
    candidates = [voice] if os.path.isfile(voice) else [
        os.path.join(voices_dir, f"{voice}{ext}") for ext in (".npy", ".pt")]
    for path in candidates:
        if os.path.isfile(path):
            if path.endswith(".npy"):
                return np.load(path).reshape(-1, 256)
            import torch

            return torch.load(path, weights_only=True).numpy().reshape(-1, 256)
    raise FileNotFoundError(f"voice {voice!r} not found (looked for {', '.join(candidates)})")


class KokoroBackend(TTSBackend):
    """Kokoro-82M on torch through the ``kokoro`` package; 24 kHz."""

    name = "kokoro"
    sample_rate = 24000

    def __init__(self, model: str = "hexgrad/Kokoro-82M", voice: str = KOKORO_VOICE,
                 speed: float = 1.0) -> None:
        import logging

        import jieba
        from kokoro import KModel, KPipeline

        jieba.setLogLevel(logging.WARNING)  # KPipeline's Mandarin G2P segments with jieba
        if os.path.isfile(model):  # a local .pth, with the config.json that comes with it
            config = os.path.join(os.path.dirname(os.path.abspath(model)), "config.json")
            kmodel = KModel(repo_id="hexgrad/Kokoro-82M", config=config, model=model)
        else:
            with loading_model("Kokoro model", model, hint="speak with --tts kokoro-onnx --tts-model FILE.onnx"):
                kmodel = KModel(repo_id=model)
        self.pipeline = KPipeline(lang_code="z", repo_id="hexgrad/Kokoro-82M", model=kmodel.eval())
        self.model_name, self.voice, self.speed = model, voice, speed  # voice: a name or a .pt path

    @property
    def cache_key(self) -> str:
        return f"kokoro:{self.model_name}:{self.voice}:speed={self.speed}"

    def _speak(self, sentence: str) -> np.ndarray:
        chunks = [np.asarray(r.audio, dtype=np.float32).reshape(-1)
                  for r in self.pipeline(sentence, voice=self.voice, speed=self.speed) if r.audio is not None]
        return np.concatenate(chunks) if chunks else np.zeros(0, np.float32)


class EspeakBackend(TTSBackend):
    """eSpeak NG's Mandarin through its command-line program; 22,050 Hz. Deterministic."""

    name = "espeak-ng"
    sample_rate = 22050
    WORDS_PER_MINUTE = 175  # espeak-ng's own default rate, which speed 1.0 keeps

    def __init__(self, voice: str = ESPEAK_VOICE, speed: float = 1.0) -> None:
        program = shutil.which("espeak-ng")
        if program is None:
            raise FileNotFoundError("the espeak-ng backend needs the espeak-ng program: `apt-get install "
                                    "espeak-ng` (Debian/Ubuntu), `dnf install espeak-ng` (Fedora)")
        self.program, self.voice, self.speed = program, voice, speed
        version = subprocess.run([program, "--version"], capture_output=True, text=True, check=True).stdout
        self.version = version.split("Data at")[0].split()[-1]  # "eSpeak NG text-to-speech: 1.51  Data at: ..."
        try:
            self._speak("你好")  # an unknown voice fails here, not in the middle of a data set
        except RuntimeError as e:
            raise ValueError(f"{e} (its Mandarin voices: cmn-latn-pinyin, and variants such as cmn-latn-pinyin+f3; "
                             "`espeak-ng --voices=zh` lists them)") from None

    @property
    def cache_key(self) -> str:
        return f"espeak-ng:{self.version}:{self.voice}:speed={self.speed}"

    def _speak(self, sentence: str) -> np.ndarray:
        done = subprocess.run([self.program, "-v", self.voice, "-s", str(round(self.WORDS_PER_MINUTE * self.speed)),
                               "--stdout", sentence], capture_output=True)
        if done.returncode != 0 or done.stdout[:4] != b"RIFF":
            raise RuntimeError(f"espeak-ng -v {self.voice} failed: {done.stderr.decode(errors='replace').strip()}")
        # a WAV written to a pipe declares no length, so its samples are everything after the data header
        start = done.stdout.index(b"data") + 8
        return np.frombuffer(done.stdout[start:], dtype="<i2").astype(np.float32) / 32768.0


def make_backend(name: str, model: str | None = None, voice: str | None = None, speed: float = 1.0,
                 threads: int | None = None, max_chars: int = MAX_CHARS) -> TTSBackend:
    """A backend by name: ``tone``, ``kokoro-onnx`` (needs ``model``: a .onnx path), ``kokoro`` or
    ``espeak-ng``.

    voice: Kokoro's (default ``zf_xiaobei``) or eSpeak NG's (default ``cmn-latn-pinyin``; ``+f3`` and the
    like after it for variants); threads: CPU threads for the model (default: all this process may use);
    max_chars: how much of each post is spoken.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, not {max_chars}")
    if name == "tone":
        backend: TTSBackend = ToneBackend(speed=speed)
    elif name == "kokoro-onnx":
        if not model:
            raise ValueError("kokoro-onnx needs --model PATH/kokoro-v1.0.int8.onnx")
        backend = KokoroOnnxBackend(model, voice=voice or KOKORO_VOICE, speed=speed, threads=threads)
    elif name == "kokoro":
        backend = KokoroBackend(model or "hexgrad/Kokoro-82M", voice=voice or KOKORO_VOICE, speed=speed)
    elif name == "espeak-ng":
        backend = EspeakBackend(voice=voice or ESPEAK_VOICE, speed=speed)
    else:
        raise ValueError(f"unknown TTS backend {name!r}; backends: {', '.join(BACKENDS)}")
    backend.max_chars = max_chars
    return backend
