"""The ``mmbert`` command: a thin shell over the ``mmbert`` API.

Every command checks its input files before it loads a model (which takes seconds to a minute), and
imports torch and transformers only once it needs them.
"""
from __future__ import annotations

import functools
import json
import sys

import click

from cloak.io import RecordError, check_files, read_records
from speech import BACKENDS

from .folder import peek_features

EXAMPLES = """
\b
Examples:
  mmbert pretrain --corpus posts.jsonl --config small --out backbone/
  mmbert train --stage 1 --config small --train train.jsonl --dev dev.jsonl --out s1/ --from backbone/
  mmbert train --stage 2 --config small --train train.jsonl --dev dev.jsonl --out s2/ --from s1/
  mmbert train --stage 3 --config small --train train.jsonl --dev dev.jsonl --out s3/ --from s2/
  mmbert evaluate --model s3/ --data test.jsonl
  mmbert predict --model s3/ --in posts.jsonl --out scored.jsonl
  mmbert routing --model s3/ --data cloaked_test.jsonl --out routing/
Multi-GPU: accelerate launch -m mmbert.cli train ...
"""


def _fail(message: str) -> None:
    click.echo(f"mmbert: error: {message}", err=True)
    sys.exit(1)


def _errors_reported(func):
    """Bad input ends with one line naming what is wrong, not a traceback; Ctrl-C with one saying
    what was kept."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except KeyboardInterrupt:
            resumable = func.__name__ in ("train", "pretrain")
            click.echo("mmbert: interrupted" + ("; the last checkpoint is kept in OUT/checkpoint: rerun with "
                                                "--resume to continue" if resumable else ""), err=True)
            sys.exit(130)
        except (ValueError, RecordError, FileNotFoundError) as e:
            _fail(str(e))
        except ImportError as e:
            _fail(f"{e}: this needs an optional package (pip install {e.name or 'it'})")
        except OSError as e:  # e.g. a hub name that cannot be fetched on this machine
            _fail(f"{e.__class__.__name__}: {e} (models given by name are downloaded; without a model hub "
                  "pass local paths: --whisper FILE.pt, --from DIR, --vision open_clip:model=NAME:pretrained=FILE)")
    return wrapper


def _feature_options(func):
    """Overrides of the config's (or the model's) ``features`` section."""
    options = [
        click.option("--tts", default=None, type=click.Choice(BACKENDS),
                     help="TTS backend for the speech modality."),
        click.option("--tts-model", default=None, metavar="PATH", help="TTS model (kokoro-onnx: the .onnx file)."),
        click.option("--voice", default=None, help="TTS voice, e.g. zf_xiaobei."),
        click.option("--whisper", default=None, metavar="NAME|PATH", help="Whisper model for speech features."),
        click.option("--speech-cache", default=None, metavar="DIR",
                     help="Folder of cached audio and Whisper frames (the layout `cloak synth` writes)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _features(base: dict, tts, tts_model, voice, whisper, speech_cache) -> dict:
    features = json.loads(json.dumps(base))
    tts_args = features.setdefault("tts", {})
    if tts:
        tts_args.clear()
        tts_args["name"] = tts
    for key, value in (("model", tts_model), ("voice", voice)):
        if value:
            tts_args[key] = value
    if whisper:
        features["whisper"] = whisper
    if speech_cache:
        features["speech_cache"] = speech_cache
    return features


def _quiet_libraries() -> None:
    """transformers' load reports and progress bars are noise in a command's output (and their colour
    codes garble logs); errors still show. Accelerate warns on every checkpoint of a model with tied
    weights (the masked-LM head) that it saved them once, which is what it should do."""
    import logging

    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    logging.getLogger("accelerate.utils.other").addFilter(
        lambda record: "Removed shared tensor" not in record.getMessage())


def _load(model_dir: str, tts, tts_model, voice, whisper, speech_cache):
    """(model, featurizer) of a trained folder, its saved feature settings overridden by the options."""
    from .loading import load_model

    features = _features(peek_features(model_dir), tts, tts_model, voice, whisper, speech_cache)
    _quiet_libraries()
    return load_model(model_dir, features)


def _records(path: str) -> list[dict]:
    return [r for _, r in read_records(path, unique_ids=True)]


@click.group(epilog=EXAMPLES, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mmcloak")
def main() -> None:
    """MMBERT: a mixture-of-experts BERT reading each post as text, synthetic speech and glyph images,
    trained in three stages (aligners, experts, the whole), to detect cloaked hate speech."""


@main.command()
@click.option("--stage", type=click.IntRange(1, 3), required=True,
              help="1: aligners; 2: modality experts; 3: the whole MoE model.")
@click.option("--config", "config", default="small", show_default=True, metavar="PRESET|YAML",
              help="A preset (paper, small, tiny) or a YAML file (may start from a preset).")
@click.option("--train", "train_path", required=True, metavar="FILE", help="Training records (JSONL with text, label).")
@click.option("--dev", "dev_path", required=True, metavar="FILE", help="Dev records, for early stopping on macro-F1.")
@click.option("--out", "out_dir", required=True, metavar="DIR", help="Output folder: the best model, log.json.")
@click.option("--from", "from_dir", default=None, metavar="DIR|NAME",
              help="Stage 1: a BERT checkpoint to upcycle (default: the config's backbone, or from scratch). "
                   "Stages 2 and 3: the previous stage's output.")
@click.option("--resume", is_flag=True, help="Continue an interrupted run from OUT/checkpoint.")
@click.option("--skip-stages", is_flag=True, help="Allow starting without the previous stage (ablation).")
@_feature_options
@click.option("--vision", default=None, metavar="ENCODER[:K=V...]",
              help="Vision encoder (features.vision), chosen when stage 1 builds the model: glyph-cnn, "
                   "open_clip:model=NAME:pretrained=TAG|FILE or transformers:model=NAME|DIR.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@_errors_reported
def train(stage, config, train_path, dev_path, out_dir, from_dir, resume, skip_stages, tts, tts_model, voice,
          whisper, speech_cache, vision, quiet) -> None:
    """Train one stage of MMBERT; the best epoch's model is saved to OUT (save_pretrained)."""
    check_files([train_path, dev_path])
    from .presets import load_run_config, parse_vision
    from .train import train_stage

    run = load_run_config(config)
    run["features"] = _features(run["features"], tts, tts_model, voice, whisper, speech_cache)
    if vision:
        run["features"]["vision"] = parse_vision(vision)
    _quiet_libraries()
    result = train_stage(stage, run, train_path, dev_path, out_dir, from_dir, resume=resume,
                         allow_skip=skip_stages, progress=False if quiet else None)
    click.echo(f"stage {stage}: best epoch {result['best_epoch']}, dev score {result['best_score']:.4f} "
               f"(model in {out_dir}, log in {out_dir}/log.json)", err=True)


@main.command()
@click.option("--corpus", required=True, metavar="FILE", help="JSONL records or a text file, one post a line.")
@click.option("--config", "config", default="small", show_default=True, metavar="PRESET|YAML",
              help="Backbone shape (model section) and pretrain epochs / lr (train.pretrain).")
@click.option("--out", "out_dir", required=True, metavar="DIR", help="Output folder: a BERT masked-LM model.")
@click.option("--resume", is_flag=True, help="Continue an interrupted run from OUT/checkpoint.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@_errors_reported
def pretrain(corpus, config, out_dir, resume, quiet) -> None:
    """Pre-train a from-scratch BERT backbone with masked language modelling."""
    check_files([corpus])
    from .presets import load_run_config
    from .pretrain import pretrain as run_pretrain

    _quiet_libraries()
    entry = run_pretrain(corpus, out_dir, load_run_config(config), resume=resume, progress=False if quiet else None)
    click.echo(f"pretrain: {entry.get('epoch')} epochs, best held-out MLM loss {entry['best_mlm_loss']:.4f} "
               f"(epoch {entry['best_epoch']}; model in {out_dir})", err=True)


@main.command()
@click.option("--model", "model_dir", required=True, metavar="DIR", help="A trained MMBERT folder.")
@click.option("--data", "data_path", required=True, metavar="FILE", help="Labelled records (JSONL).")
@click.option("--out", "out_path", default=None, metavar="FILE", help="Also write the figures as JSON.")
@click.option("--batch-size", type=click.IntRange(1), default=32, show_default=True)
@_feature_options
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@_errors_reported
def evaluate(model_dir, data_path, out_path, batch_size, tts, tts_model, voice, whisper, speech_cache, quiet) -> None:
    """Accuracy and macro precision / recall / F1, overall and per cloaking op."""
    from rich.console import Console
    from rich.table import Table

    from cloak.io import write_atomic

    peek_features(model_dir)
    check_files([data_path], [out_path] if out_path else [])
    from .train import read_labelled

    # The whole file checked before the model loads; a repeated id would count a post twice.
    records = read_labelled(data_path, unique_ids=True)
    from .inference import evaluate_records

    model, featurizer = _load(model_dir, tts, tts_model, voice, whisper, speech_cache)
    result = evaluate_records(model, featurizer, records, batch_size, progress=False if quiet else None)
    table = Table(title=f"{model_dir} on {data_path}")
    for column in ("group", "n", "accuracy", "precision", "recall", "macro-F1"):
        table.add_column(column, justify="left" if column == "group" else "right")
    for group, m in [("all", result["overall"]), *result["by_op"].items()]:
        table.add_row(group, str(m["n"]), *(f"{m[k]:.4f}" for k in ("accuracy", "precision", "recall", "f1")))
    Console(stderr=True).print(table)
    if out_path:
        write_atomic(out_path, json.dumps(result, indent=1).encode())
    else:
        click.echo(json.dumps(result))


@main.command()
@click.option("--model", "model_dir", required=True, metavar="DIR", help="A trained MMBERT folder.")
@click.option("--in", "in_path", required=True, metavar="FILE", help="Records to score (JSONL).")
@click.option("--out", "out_path", required=True, metavar="FILE",
              help="Records plus mmbert: {probs, label, experts, routing[layer][expert]}.")
@click.option("--batch-size", type=click.IntRange(1), default=32, show_default=True)
@click.option("--no-routing", is_flag=True, help="Leave out the per-layer routing weights.")
@_feature_options
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@_errors_reported
def predict(model_dir, in_path, out_path, batch_size, no_routing, tts, tts_model, voice, whisper, speech_cache,
            quiet) -> None:
    """Probabilities and per-layer routing weights for each record."""
    peek_features(model_dir)
    check_files([in_path], [out_path])
    for _ in read_records(in_path, unique_ids=True):  # every line checked (streamed) before the model loads
        pass
    from .inference import predict_file

    model, featurizer = _load(model_dir, tts, tts_model, voice, whisper, speech_cache)
    n = predict_file(model, featurizer, in_path, out_path, batch_size, routing=not no_routing,
                     progress=False if quiet else None)
    click.echo(f"predict: {n} records scored into {out_path}", err=True)


@main.command()
@click.option("--model", "model_dir", required=True, metavar="DIR", help="A trained MMBERT folder.")
@click.option("--data", "data_path", required=True, metavar="FILE", help="Records, cloaked ones carrying cloak.edits.")
@click.option("--out", "out_dir", required=True, metavar="DIR", help="Folder for routing.json and routing.png.")
@click.option("--batch-size", type=click.IntRange(1), default=32, show_default=True)
@_feature_options
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@_errors_reported
def routing(model_dir, data_path, out_dir, batch_size, tts, tts_model, voice, whisper, speech_cache, quiet) -> None:
    """Mean routing weight per layer and expert, grouped by cloaking op (the paper's Fig. 3)."""
    peek_features(model_dir)
    records = _records(data_path)  # the whole file checked before the model loads
    from .routing import routing_analysis

    model, featurizer = _load(model_dir, tts, tts_model, voice, whisper, speech_cache)
    table = routing_analysis(model, featurizer, records, out_dir, batch_size,
                             progress=False if quiet else None)
    groups = ", ".join(f"{g} ({v['n']})" for g, v in table["groups"].items())
    click.echo(f"routing: {groups} -> {out_dir}/routing.json, {out_dir}/routing.png", err=True)


if __name__ == "__main__":
    main()
