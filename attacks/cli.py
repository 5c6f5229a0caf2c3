"""The ``attacks`` command: a thin shell over the ``attacks`` API.

Inputs are checked before anything heavy is imported or loaded; torch victims import torch on use.
"""
from __future__ import annotations

import functools
import json
import sys
import time

import click
import numpy as np

from cloak.io import RecordError, batched, check_files, check_records, dump_record, read_records, write_atomic
from cloak.params import ParameterError, validate

EXAMPLES = """
\b
Examples:
  attacks models
  attacks train --model tfidf-lr --train train.jsonl --dev dev.jsonl --out victims/tfidf-lr
  attacks train --model bert --backbone backbone/ --train train.jsonl --dev dev.jsonl --out victims/bert
  attacks predict --victim victims/tfidf-lr --in posts.jsonl --out scored.jsonl
  attacks curve --model tfidf-lr --train train.jsonl --test test.jsonl --out curve/
"""


def _fail(message: str) -> None:
    click.echo(f"attacks: error: {message}", err=True)
    sys.exit(1)


def _errors_reported(func):
    """Bad input ends with one line naming what is wrong; Ctrl-C with one saying what was kept."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except KeyboardInterrupt:
            kept = {"train": "; a torch victim's last checkpoint is kept in OUT/checkpoint: rerun with --resume",
                    "curve": "; finished runs are kept in OUT/runs.jsonl: rerun the same command to finish"}
            click.echo(f"attacks: interrupted{kept.get(func.__name__, '')}", err=True)
            sys.exit(130)
        except (ValueError, RecordError, FileNotFoundError, IsADirectoryError) as e:
            _fail(str(e))
        except ImportError as e:
            _fail(f"{e}: this victim needs an optional package (pip install mmcloak[attacks])")
        except OSError as e:  # a model named by hub name, on a machine without a hub
            _fail(f"{e.__class__.__name__}: {e} (models given by name are downloaded; without a model hub pass a "
                  "folder: --backbone DIR)")
    return wrapper


def _quiet_libraries() -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


def _settings(config_path: str | None, **flags) -> tuple[dict, dict]:
    """(config, training) from a YAML file ({config: ..., training: ...}) with the flags laid over it."""
    sections: dict = {}
    if config_path:
        import yaml

        with open(config_path, encoding="utf-8") as f:
            try:
                sections = yaml.safe_load(f) or {}
            except yaml.YAMLError as e:
                raise ValueError(f"{config_path}: not valid YAML: {e}") from None
        try:
            sections = validate(sections, {"config": dict, "training": dict}, "")
        except ParameterError as e:
            raise ParameterError(f"{config_path}: {e}") from None
    config, training = dict(sections.get("config") or {}), dict(sections.get("training") or {})
    for key, value in flags.items():
        if value is None or value is False:
            continue
        (training if key in ("grid", "oversample", "seed") else config)[key] = value
    return config, training


def _labelled(path: str) -> list[dict]:
    return [r for _, r in read_records(path, labels=True)]


@click.group(epilog=EXAMPLES, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mmcloak")
def main() -> None:
    """Detectors behind one contract, trained, scored and (next) attacked with cloaking and FGM."""


@main.command("models")
def list_models() -> None:
    """List the detectors: name, what it is, and whether it takes embedding-space attacks."""
    from . import victim_names
    from .victim import LAZY_KINDS

    descriptions = {"bert": "any BERT checkpoint fine-tuned with a classification head (paper 001's recipe)",
                    "chinesebert": "ChineseBERT-style: character + glyph + pinyin embeddings fused into a BERT",
                    "mmbert": "MMBERT: text + speech + glyph mixture of experts, three stages",
                    "llm": "an LLM behind an OpenAI-compatible endpoint, MMBERT's Appendix B prompt"}
    features = {"bow": "binary bag of jieba words", "tfidf": "character 1-3-gram TF-IDF",
                "emb": "mean word vectors (--vectors)"}
    classifiers = {"lr": "logistic regression", "svm": "linear SVM", "rbf": "RBF SVM", "nb": "naive Bayes",
                   "rf": "random forest", "gbt": "gradient-boosted trees (LightGBM)"}
    for name in victim_names():
        if name in LAZY_KINDS:
            what, differentiable = descriptions[name], name != "llm"
        else:
            f, c = name.split("-")
            what, differentiable = f"{features[f]} + {classifiers[c]}", False
        click.echo(f"{name:12} {what}{'  [differentiable: FGM / PGD]' if differentiable else ''}")


@main.command()
@click.option("--model", "name", required=True, metavar="NAME", help="A detector: `attacks models` lists them.")
@click.option("--train", "train_path", required=True, metavar="FILE", help="Labelled training records (JSONL).")
@click.option("--dev", "dev_path", default=None, metavar="FILE",
              help="Labelled dev records: picks a torch victim's best epoch (else a share of --train is held out); "
                   "scored for every victim.")
@click.option("--out", "out_dir", required=True, metavar="DIR", help="Where the victim is saved (victim.json + weights).")
@click.option("--backbone", default=None, metavar="NAME|DIR", help="bert / chinesebert / mmbert: the BERT to start from.")
@click.option("--vectors", default=None, metavar="FILE", help="emb-*: word vectors, word2vec text format.")
@click.option("--config", "config_path", default=None, metavar="YAML",
              help="Settings: {config: {...}, training: {...}} (`attacks models` names the kinds).")
@click.option("--grid", is_flag=True, default=None, help="Conventional: paper 001's 5-fold CV grid on macro-F1.")
@click.option("--oversample", is_flag=True, default=None, help="Conventional: minority classes to 1/4 of the majority.")
@click.option("--seed", type=click.IntRange(0), default=None, help="Seed of the training [default: 0].")
@click.option("--resume", is_flag=True, help="Torch victims: continue from OUT/checkpoint.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@_errors_reported
def train(name, train_path, dev_path, out_dir, backbone, vectors, config_path, grid, oversample, seed, resume,
          quiet) -> None:
    """Train a detector and save it as a victim."""
    check_files([train_path, *([dev_path] if dev_path else []), *([config_path] if config_path else [])])
    train_records = _labelled(train_path)
    dev_records = _labelled(dev_path) if dev_path else None
    config, training = _settings(config_path, backbone=backbone, vectors=vectors, grid=grid, oversample=oversample,
                                 seed=seed)
    from . import make_victim

    victim = make_victim(name, config, training)
    if victim.differentiable:
        _quiet_libraries()
    started = time.perf_counter()
    victim.fit(train_records, dev_records, out_dir=out_dir, resume=resume, progress=False if quiet else None)
    seconds = time.perf_counter() - started
    victim.save(out_dir)
    report = {"victim": victim.name, "train": train_path, "train_records": len(train_records),
              "seconds": round(seconds, 1), "grid": getattr(victim, "grid_results", None)}
    line = f"{victim.name}: trained on {len(train_records)} posts in {seconds:.1f} s"
    if dev_records:
        from .metrics import detection_metrics

        figures = detection_metrics([r["label"] for r in dev_records],
                                    victim.predict_proba([r["text"] for r in dev_records]))
        report.update(dev=dev_path, dev_figures=figures)
        line += f"; dev macro-F1 {figures['f1']:.4f}, accuracy {figures['accuracy']:.4f}, AUC {figures['auc']:.4f}"
    write_atomic(f"{out_dir}/training.json", (json.dumps(report, indent=1, ensure_ascii=False) + "\n").encode())
    click.echo(f"{line} (victim in {out_dir})", err=True)


@main.command()
@click.option("--victim", "victim_dir", required=True, metavar="DIR", help="A saved victim (or an MMBERT folder).")
@click.option("--in", "in_path", required=True, metavar="FILE", help="Records to score (JSONL).")
@click.option("--out", "out_path", required=True, metavar="FILE",
              help="Each record plus victim: {name, probs, label}.")
@click.option("--batch-size", type=click.IntRange(1), default=256, show_default=True)
@_errors_reported
def predict(victim_dir, in_path, out_path, batch_size) -> None:
    """Score records with a saved victim."""
    check_files([in_path], [out_path])
    check_records(in_path, unique_ids=True)  # the whole file, before the victim loads
    from cloak.io import AtomicWriter

    from . import load_victim

    _quiet_libraries()
    victim = load_victim(victim_dir)
    n = 0
    with AtomicWriter(out_path) as out:
        for block in batched((r for _, r in read_records(in_path, unique_ids=True)), batch_size):
            probs = victim.predict_proba([r["text"] for r in block])
            for record, p in zip(block, probs):
                answered = not np.isnan(p).any()  # an LLM answer that names no label has no probabilities
                entry = {"name": victim.name, "probs": [round(float(x), 6) for x in p] if answered else None,
                         "label": int(p.argmax()) if answered else -1}
                out.write(dump_record({**record, "victim": entry}))
                n += 1
    click.echo(f"predict: {n} records scored by {victim.name} into {out_path}", err=True)


@main.command()
@click.option("--model", "name", required=True, metavar="NAME", help="A detector: `attacks models` lists them.")
@click.option("--train", "train_path", required=True, metavar="FILE", help="Labelled training records to sample from.")
@click.option("--test", "test_path", required=True, metavar="FILE", help="Labelled test records.")
@click.option("--out", "out_dir", required=True, metavar="DIR", help="runs.jsonl, curve.json and curve.png.")
@click.option("--sizes", default="500,1000,2000,5000,10000", show_default=True, metavar="N,N,...")
@click.option("--repeats", type=click.IntRange(1), default=5, show_default=True)
@click.option("--backbone", default=None, metavar="NAME|DIR")
@click.option("--vectors", default=None, metavar="FILE")
@click.option("--config", "config_path", default=None, metavar="YAML")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True)
@_errors_reported
def curve(name, train_path, test_path, out_dir, sizes, repeats, backbone, vectors, config_path, seed) -> None:
    """Paper 001's curve: macro-F1 against training size, nested subsamples, repeated."""
    check_files([train_path, test_path, *([config_path] if config_path else [])])
    try:
        size_list = sorted({int(s) for s in sizes.split(",") if s.strip()})
    except ValueError:
        raise ValueError(f"--sizes must be whole numbers separated by commas, not {sizes!r}") from None
    if not size_list or size_list[0] < 2:
        raise ValueError("--sizes must be at least 2 posts each")
    train_records, test_records = _labelled(train_path), _labelled(test_path)
    config, training = _settings(config_path, backbone=backbone, vectors=vectors)
    from . import make_victim
    from .curve import training_curve

    make_victim(name, config, training)  # settings checked before the first run
    summary = training_curve(lambda s: make_victim(name, config, {**training, "seed": s}), train_records,
                             test_records, size_list, repeats, out_dir, seed,
                             progress=lambda line: click.echo(line, err=True))
    for row in summary["by_size"]:
        click.echo(f"{row['size']:>7,}  macro-F1 {row['mean_macro_f1']:.4f} "
                   f"[{row['min_macro_f1']:.4f}, {row['max_macro_f1']:.4f}]", err=True)
    click.echo(f"curve: {out_dir}/curve.json, {out_dir}/curve.png", err=True)


if __name__ == "__main__":
    main()
