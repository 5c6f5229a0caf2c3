"""speech: text-to-speech backends, audio cache and Whisper encoder features.

The names below are imported on first use, so that a command line offering the backends
(``mmbert --help``) does not wait for numpy.
"""
from __future__ import annotations

from cloak.common.lazy import lazy_exports

BACKENDS = ("tone", "kokoro-onnx", "kokoro", "espeak-ng")  # speech.tts's, by name

_EXPORTS = {"AudioCache": "cache", "speakable": "text", **{name: "tts" for name in (
    "EspeakBackend", "KokoroBackend", "KokoroOnnxBackend", "ToneBackend", "TTSBackend", "make_backend")}}

__all__ = sorted(["BACKENDS", *_EXPORTS])
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
