"""``cloak speak`` (TTS of a corpus) and ``cloak synth`` (TTS + Whisper features, one pass)."""
from __future__ import annotations

import sys

import click

from cloak.io import RecordError

from .tts import BACKENDS


def _fail(command: str, message: str) -> None:
    click.echo(f"cloak {command}: error: {message}", err=True)
    sys.exit(1)


def _tts_options(func):
    options = [
        click.option("--in", "in_path", required=True, metavar="FILE|-", help="JSONL records to speak."),
        click.option("--backend", type=click.Choice(BACKENDS), default="tone", show_default=True,
                     help="tone: deterministic, no weights (tests); kokoro-onnx: Kokoro-82M via "
                          "onnxruntime (--model .onnx); kokoro: the kokoro package on torch."),
        click.option("--model", metavar="PATH|NAME", help="TTS model: the .onnx for kokoro-onnx."),
        click.option("--voice", default="zf_xiaobei", show_default=True,
                     help="Mandarin voice (zf_* / zm_*) or a voice file."),
        click.option("--speed", type=float, default=1.0, show_default=True, help="Speaking rate."),
        click.option("--workers", type=click.IntRange(1), default=1, show_default=True,
                     help="TTS worker processes (each loads the model)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@click.command()
@_tts_options
@click.option("--out", "out_dir", required=True, metavar="DIR", help="Audio cache and index.jsonl.")
def speak(in_path, backend, model, voice, speed, workers, out_dir) -> None:
    """Speak every record's text; audio is cached by content, so a rerun only does what is missing.

    \b
    cloak speak --in data.jsonl --out speech/ --backend kokoro-onnx \\
        --model weights/kokoro/kokoro-v1.0.int8.onnx --voice zf_xiaobei
    """
    _run("speak", in_path, out_dir, (backend, model, voice, speed), workers, None)


@click.command()
@_tts_options
@click.option("--speech-out", "out_dir", required=True, metavar="DIR",
              help="Audio and feature caches and index.jsonl.")
@click.option("--whisper", default="base", show_default=True, metavar="NAME|PATH",
              help="openai-whisper model name or checkpoint (.pt).")
@click.option("--whisper-mode", type=click.Choice(["trimmed", "padded"]), default="trimmed",
              show_default=True, help="Encode only the utterance's frames, or Whisper's 30 s window.")
def synth(in_path, backend, model, voice, speed, workers, out_dir, whisper, whisper_mode) -> None:
    """Speak every record and encode the speech with Whisper's encoder, in one resumable pass."""
    from .features import WhisperEncoder

    try:
        encoder = WhisperEncoder(whisper, mode=whisper_mode)
    except (OSError, RuntimeError) as e:
        _fail("synth", f"cannot load Whisper model {whisper!r}: {e}")
    _run("synth", in_path, out_dir, (backend, model, voice, speed), workers, encoder)


def _run(command, in_path, out_dir, backend_args, workers, encoder) -> None:
    from .synth import speak_file
    from .tts import make_backend

    try:
        make_backend(*backend_args)  # fail now, on bad options, not in a worker
        counts = speak_file(in_path, out_dir, backend_args, workers=workers, encoder=encoder)
    except KeyboardInterrupt:
        _fail(command, "interrupted; what is done is cached: rerun the same command to finish")
    except (RecordError, ValueError, OSError, ImportError) as e:
        _fail(command, str(e))
    click.echo(f"cloak {command}: " + ", ".join(f"{k} {v}" for k, v in counts.items()), err=True)
