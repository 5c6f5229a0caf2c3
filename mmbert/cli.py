"""The ``mmbert`` command: a thin shell over the ``mmbert`` API.

Every command checks its input files before it loads a model (which takes seconds to a minute), and
imports torch and transformers only once it needs them.
"""
from __future__ import annotations

import json
import os

import click

from cloak.common.commands import check_out_folder, plural, reports_errors
from cloak.common.io import check_files, read_records
from cloak.common.models import looks_like_path
from speech import BACKENDS

from .folder import mmbert_config, peek_features, what_training_kept

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
Multi-GPU: accelerate launch --multi_gpu -m mmbert.cli train ...
"""


# A model that cannot be loaded says which and, for a name, what to pass without a hub (cloak.common.models).
_errors_reported = reports_errors("mmbert", extra="train", interrupted=dict.fromkeys(
    ("train", "pretrain"), lambda args: what_training_kept(args["out_dir"])))


def _warn(message: str) -> None:
    click.echo(f"mmbert: warning: {message}", err=True)


def _stage_warning(model_dir: str) -> None:
    """A stage-1 model has trained aligners and nothing else: its classifier answers at random."""
    stage = (mmbert_config(model_dir) or {}).get("stage")
    if stage == 1:
        _warn(f"{model_dir} is a stage-1 model: only its aligners are trained, its classifier is as random as "
              "it started; train stages 2 and 3 (mmbert train --stage 2 --from ...) for a detector")


def _feature_options(func):
    """Overrides of the config's (or the model's) ``features`` section."""
    options = [
        click.option("--tts", default=None, type=click.Choice(BACKENDS),
                     help="TTS backend for the speech modality [default: the config's, or the model's]."),
        click.option("--tts-model", default=None, metavar="PATH",
                     help="TTS model (kokoro-onnx: the .onnx file) [default: the config's, or the model's]."),
        click.option("--voice", default=None, help="TTS voice, e.g. zf_xiaobei [default: the backend's]."),
        click.option("--whisper", default=None, metavar="NAME|PATH|random-tiny",
                     help="Whisper model for speech features [default: the config's, or the model's]."),
        click.option("--speech-cache", default=None, metavar="DIR",
                     help="Folder of cached audio and Whisper frames (the layout `cloak synth` writes) "
                          "[default: speech/ in the user cache folder, $MMCLOAK_CACHE or ~/.cache/mmcloak]."),
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

    saved = peek_features(model_dir)
    if "speech" in mmbert_config(model_dir).get("modalities", ()):
        # A folder copied from another machine names its speech weights by that machine's paths.
        for path, given, option in ((saved.get("whisper"), whisper, "--whisper"),
                                    ((saved.get("tts") or {}).get("model"), tts or tts_model, "--tts-model")):
            if path and not given and looks_like_path(path) and not os.path.exists(path):
                raise ValueError(f"{model_dir} was trained with {path}, which is not here: give where the same "
                                 f"weights are with {option} PATH")
    features = _features(saved, tts, tts_model, voice, whisper, speech_cache)
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
@click.option("--resume", is_flag=True, help="Continue an interrupted run from OUT/checkpoint (without it a rerun "
                                             "starts over).")
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
    check_out_folder("--out", out_dir)
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
               f"(model in {out_dir}, log in {os.path.join(out_dir, 'log.json')})", err=True)
    if result["warning"]:
        _warn(f"the stage-{stage} model is useless as trained: {result['warning']} (check the labels, or train "
              "longer)")


@main.command()
@click.option("--corpus", required=True, metavar="FILE", help="JSONL records or a text file, one post a line.")
@click.option("--config", "config", default="small", show_default=True, metavar="PRESET|YAML",
              help="Backbone shape (model section) and pretrain epochs / lr (train.pretrain).")
@click.option("--out", "out_dir", required=True, metavar="DIR", help="Output folder: a BERT masked-LM model.")
@click.option("--resume", is_flag=True, help="Continue an interrupted run from OUT/checkpoint (without it a rerun "
                                             "starts over).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@_errors_reported
def pretrain(corpus, config, out_dir, resume, quiet) -> None:
    """Pre-train a from-scratch BERT backbone with masked language modelling."""
    check_files([corpus])
    check_out_folder("--out", out_dir)
    from .presets import load_run_config
    from .pretrain import pretrain as run_pretrain

    _quiet_libraries()
    entry = run_pretrain(corpus, out_dir, load_run_config(config), resume=resume, progress=False if quiet else None)
    click.echo(f"pretrain: {plural(entry.get('epoch') or 0, 'epoch')}, best held-out MLM loss "
               f"{entry['best_mlm_loss']:.4f} "
               f"(epoch {entry['best_epoch']}; model in {out_dir})", err=True)


@main.command()
@click.option("--model", "model_dir", required=True, metavar="DIR", help="A trained MMBERT folder.")
@click.option("--data", "data_path", required=True, metavar="FILE", help="Labelled records (JSONL).")
@click.option("--out", "out_path", default=None, metavar="FILE", help="Also write the figures as JSON.")
@click.option("--batch-size", type=click.IntRange(1), default=32, show_default=True, help="Posts a forward pass.")
@_feature_options
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@_errors_reported
def evaluate(model_dir, data_path, out_path, batch_size, tts, tts_model, voice, whisper, speech_cache, quiet) -> None:
    """Accuracy and macro precision / recall / F1, overall and per cloaking op."""
    from rich.console import Console
    from rich.table import Table

    from cloak.common.io import write_atomic

    peek_features(model_dir)
    check_files([data_path], [out_path] if out_path else [])
    _stage_warning(model_dir)
    from .metrics import useless_reason
    from .train import read_labelled

    # The whole file checked before the model loads: a repeated id would count a post twice, a label the
    # model does not know would be scored as a class of its own.
    records = read_labelled(data_path, unique_ids=True, model_dir=model_dir)
    from .inference import evaluate_records

    model, featurizer = _load(model_dir, tts, tts_model, voice, whisper, speech_cache)
    result = evaluate_records(model, featurizer, records, batch_size, progress=False if quiet else None)
    table = Table(title=f"{model_dir} on {data_path}")
    for column in ("group", "n", "accuracy", "precision", "recall", "macro-F1"):
        table.add_column(column, justify="left" if column == "group" else "right")
    for group, m in [("all", result["overall"]), *result["by_op"].items()]:
        table.add_row(group, str(m["n"]), *(f"{m[k]:.4f}" for k in ("accuracy", "precision", "recall", "f1")))
    Console(stderr=True).print(table)
    overall = result["overall"]
    warning = useless_reason(overall["f1"], overall["n"], result["predicted"], "posts")
    if warning:
        _warn(f"{model_dir} is useless on these posts: {warning}")
    if out_path:
        write_atomic(out_path, json.dumps(result, indent=1).encode())


@main.command()
@click.option("--model", "model_dir", required=True, metavar="DIR", help="A trained MMBERT folder.")
@click.option("--in", "in_path", required=True, metavar="FILE", help="Records to score (JSONL).")
@click.option("--out", "out_path", required=True, metavar="FILE",
              help="Records plus mmbert: {probs, label, experts, routing[layer][expert]}.")
@click.option("--batch-size", type=click.IntRange(1), default=32, show_default=True, help="Posts a forward pass.")
@click.option("--no-routing", is_flag=True, help="Leave out the per-layer routing weights.")
@_feature_options
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@_errors_reported
def predict(model_dir, in_path, out_path, batch_size, no_routing, tts, tts_model, voice, whisper, speech_cache,
            quiet) -> None:
    """Probabilities and per-layer routing weights for each record."""
    peek_features(model_dir)
    check_files([in_path], [out_path])
    _stage_warning(model_dir)
    for _ in read_records(in_path, unique_ids=True):  # every line checked (streamed) before the model loads
        pass
    from .inference import predict_file

    model, featurizer = _load(model_dir, tts, tts_model, voice, whisper, speech_cache)
    n = predict_file(model, featurizer, in_path, out_path, batch_size, routing=not no_routing,
                     progress=False if quiet else None)
    click.echo(f"predict: {plural(n, 'record')} scored into {out_path}", err=True)


@main.command()
@click.option("--model", "model_dir", required=True, metavar="DIR", help="A trained MMBERT folder.")
@click.option("--data", "data_path", required=True, metavar="FILE", help="Records, cloaked ones carrying cloak.edits.")
@click.option("--out", "out_dir", required=True, metavar="DIR", help="Folder for routing.json and routing.png.")
@click.option("--batch-size", type=click.IntRange(1), default=32, show_default=True, help="Posts a forward pass.")
@_feature_options
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@_errors_reported
def routing(model_dir, data_path, out_dir, batch_size, tts, tts_model, voice, whisper, speech_cache, quiet) -> None:
    """Mean routing weight per layer and expert, grouped by cloaking op (Xue et al. (2025)'s Fig. 3); routing.json
    also splits it by kind of token: text, speech, glyphs, and the text and glyph tokens a cloak edited."""
    peek_features(model_dir)
    check_out_folder("--out", out_dir)
    _stage_warning(model_dir)
    records = _records(data_path)  # the whole file checked before the model loads
    from .routing import routing_analysis

    model, featurizer = _load(model_dir, tts, tts_model, voice, whisper, speech_cache)
    table = routing_analysis(model, featurizer, records, out_dir, batch_size,
                             progress=False if quiet else None)
    groups = ", ".join(f"{g} ({v['n']})" for g, v in table["groups"].items())
    click.echo(f"routing: {groups} -> {os.path.join(out_dir, 'routing.json')}, {os.path.join(out_dir, 'routing.png')}",
               err=True)


if __name__ == "__main__":
    main()
