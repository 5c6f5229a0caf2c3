"""speech: text-to-speech backends, audio cache and Whisper encoder features."""
from .cache import AudioCache
from .text import speakable
from .tts import BACKENDS, EspeakBackend, KokoroBackend, KokoroOnnxBackend, ToneBackend, TTSBackend, make_backend

__all__ = ["AudioCache", "BACKENDS", "EspeakBackend", "KokoroBackend", "KokoroOnnxBackend", "ToneBackend",
           "TTSBackend", "make_backend", "speakable"]
