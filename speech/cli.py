"""``cloak speak`` (TTS of a corpus) and ``cloak synth`` (TTS + Whisper features, one pass)."""
from __future__ import annotations

from collections.abc import Callable

import click

from cloak.common.commands import Renamed, check_out_folder, reports_errors
from cloak.common.io import check_files

from . import BACKENDS
from .text import MAX_CHARS


def _tts_options(func):
    options = [
        click.option("--in", "in_path", required=True, metavar="FILE|-", help="JSONL records to speak."),
        click.option("--tts", "--backend", "backend", cls=Renamed, type=click.Choice(BACKENDS), default="tone",
                     show_default=True,
                     help="TTS backend. tone: deterministic, no weights (tests); espeak-ng: eSpeak NG's Mandarin, "
                          "no weights; kokoro-onnx: Kokoro-82M via onnxruntime (--tts-model .onnx); kokoro: the "
                          "kokoro package on torch."),
        click.option("--tts-model", "--model", "model", cls=Renamed, metavar="PATH|NAME",
                     help="TTS model: the .onnx for kokoro-onnx [default: the backend's own]."),
        click.option("--voice", default=None,
                     help="Kokoro's Mandarin voice (zf_* / zm_*, or a voice file; default zf_xiaobei) or eSpeak "
                          "NG's (default cmn-latn-pinyin)."),
        click.option("--speed", type=click.FloatRange(0, min_open=True), default=1.0, show_default=True,
                     help="Speaking rate."),
        click.option("--max-chars", type=click.IntRange(1), default=MAX_CHARS, show_default=True,
                     help="Speak only a post's first N characters (Whisper hears 30 s at most, about 130 "
                          "syllables)."),
        click.option("--workers", type=click.IntRange(1), default=1, show_default=True,
                     help="TTS worker processes (each loads the model)."),
        click.option("-q", "--quiet", is_flag=True, help="No progress bar."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _errors_reported(command: str) -> Callable:
    """``cloak speak`` / ``cloak synth``'s errors in one line each (a model's import error as it says itself),
    and Ctrl-C saying that what is done is cached."""
    return reports_errors(f"cloak {command}", failures={ImportError: ""},
                          interrupted={command: "; what is done is cached: rerun the same command to finish"})


@click.command()
@_tts_options
@click.option("--speech-cache", "--out", "out_dir", cls=Renamed, required=True, metavar="DIR",
              help="Audio cache and index.jsonl (what `mmbert --speech-cache` reads).")
@_errors_reported("speak")
def speak(in_path, backend, model, voice, speed, max_chars, workers, quiet, out_dir) -> None:
    """Speak every record's text; audio is cached by content, so a rerun only does what is missing.

    \b
    cloak speak --in data.jsonl --speech-cache speech/ --tts kokoro-onnx \\
        --tts-model weights/kokoro/kokoro-v1.0.int8.onnx --voice zf_xiaobei
    """
    _run("speak", in_path, out_dir, _backend_args(backend, model, voice, speed, max_chars), workers, None, quiet)


@click.command()
@_tts_options
@click.option("--speech-cache", "--speech-out", "out_dir", cls=Renamed, required=True, metavar="DIR",
              help="Audio and feature caches and index.jsonl (what `mmbert --speech-cache` reads).")
@click.option("--whisper", default="base", show_default=True, metavar="NAME|PATH",
              help="openai-whisper model name or checkpoint (.pt).")
@click.option("--whisper-mode", type=click.Choice(["trimmed", "padded"]), default="trimmed",
              show_default=True, help="Encode only the utterance's frames, or Whisper's 30 s window.")
@_errors_reported("synth")
def synth(in_path, backend, model, voice, speed, max_chars, workers, quiet, out_dir, whisper, whisper_mode) -> None:
    """Speak every record and encode the speech with Whisper's encoder, in one resumable pass."""
    check_files([in_path])  # before Whisper loads
    check_out_folder("--speech-cache", out_dir)
    from .features import WhisperEncoder

    encoder = WhisperEncoder(whisper, mode=whisper_mode)
    _run("synth", in_path, out_dir, _backend_args(backend, model, voice, speed, max_chars), workers, encoder, quiet)


def _backend_args(name, model, voice, speed, max_chars) -> dict:
    return {"name": name, "model": model, "voice": voice, "speed": speed, "max_chars": max_chars}


def _run(command, in_path, out_dir, backend_args, workers, encoder, quiet) -> None:
    from .synth import speak_file
    from .tts import make_backend

    check_files([in_path])
    check_out_folder("--speech-cache", out_dir)
    make_backend(**backend_args)  # fail now, on bad options, not in a worker
    counts = speak_file(in_path, out_dir, backend_args, workers=workers, encoder=encoder,
                        progress=False if quiet else None)
    click.echo(f"cloak {command}: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items()), err=True)
