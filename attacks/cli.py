"""The ``attacks`` command: a thin shell over the ``attacks`` API.

Inputs are checked before anything heavy is imported or loaded; torch victims import torch on use.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import time

import click
import numpy as np

from cloak.cli import ray_options
from cloak.common.commands import check_out_folder, dataclass_options, plural, reports_errors
from cloak.common.io import RecordError, batched, check_files, dump_record, known_labels, read_records, write_atomic
from cloak.common.params import ParameterError, validate
from mmbert.folder import what_training_kept

from .attack import attack_kind, make_attacks, options_classes
# the names of these tables are the CLI's choices; importing them loads no torch
from .nn.adversaries import ADVERSARIES, DEFAULT_ADVERSARY
from .nn.heads import DEFAULT_HEAD, HEADS
from .nn.regularizers import REGULARIZERS
from .victims.llm import EndpointError  # loads neither torch nor any client library

EXAMPLES = """
\b
Examples:
  attacks models
  attacks train --model tfidf-lr --train train.jsonl --dev dev.jsonl --out victims/tfidf-lr
  attacks train --model bert --backbone backbone/ --train train.jsonl --dev dev.jsonl --out victims/bert
  attacks pretrain-habertor --corpus corpus.jsonl --out habertor-lm/
  attacks train --model habertor --backbone habertor-lm/ --source-field topic --adv adaptive \\
      --train train.jsonl --dev dev.jsonl --out victims/habertor
  attacks predict --victim victims/tfidf-lr --in posts.jsonl --out scored.jsonl
  attacks curve --model tfidf-lr --train train.jsonl --test test.jsonl --out curve/
  attacks evaluate --victim victims/tfidf-lr --victim victims/bert --data test.jsonl \\
      --attacks fgm,pgd,cloak --ops homophone,emoji,homophone+emoji --variants 2 --out eval/
  attacks evaluate --victim victims/bert --data test.jsonl --attacks search --ops similar,homophone \\
      --query-budget 100 --shard 0/4 --out eval-0/
  attacks merge eval-0/ eval-1/ eval-2/ eval-3/ --out eval/
  attacks report eval/ --out report/
  attacks report eval-clean/ eval-augmented/ --label clean --label augmented --curve curve/ --out report/
"""


_errors_reported = reports_errors("attacks", extra="attacks", interrupted={
    # what a torch victim checkpointed, where it did; a conventional one keeps nothing
    **dict.fromkeys(("train", "pretrain_habertor_command"), lambda args: what_training_kept(args["out_dir"])),
    "curve": lambda args: f"; finished runs are kept in {os.path.join(args['out_dir'], 'runs.jsonl')}: rerun the "
                          "same command (--resume or not) to finish",
    "evaluate": lambda args: f"; finished outcomes are kept in {args['out_dir']}: rerun the same command (--resume or "
                             "not) to finish"},
    model_hint=" (models given by name are downloaded; without a model hub pass a folder: --backbone DIR)",
    # an LLM's server down or refusing: the answers so far are cached
    failures={EndpointError: "; the answers received are cached, so rerunning the command asks only the rest"})


def _quiet_libraries() -> None:
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # conventional victims only: no transformers to quiet
        return

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


def _yaml_sections(config_path: str | None, *names: str) -> dict:
    """The named sections (mappings) of a YAML settings file; {} without a file."""
    if not config_path:
        return {}
    import yaml

    with open(config_path, encoding="utf-8") as f:
        try:
            sections = yaml.safe_load(f) or {}
        except yaml.YAMLError as e:
            raise ValueError(f"{config_path}: not valid YAML: {e}") from None
    try:
        return validate(sections, dict.fromkeys(names, dict), "")
    except ParameterError as e:
        raise ParameterError(f"{config_path}: {e}") from None


def _settings(config_path: str | None, name: str, **flags) -> tuple[dict, dict]:
    """(config, training) of victim ``name`` from a YAML file ({config: ..., training: ...}) with the flags
    laid over it: a flag naming a field of the victim's ``Training`` says how it is trained, any other what
    it is (and is refused there by name if it is neither)."""
    from . import victim_class

    sections = _yaml_sections(config_path, "config", "training")
    config, training = dict(sections.get("config") or {}), dict(sections.get("training") or {})
    how = {field.name for field in dataclasses.fields(victim_class(name).Training)}
    for key, value in flags.items():
        if value is None or value is False:
            continue
        (training if key in how else config)[key] = value
    return config, training


def _labelled(path: str) -> list[dict]:
    return [r for _, r in read_records(path, labels=True)]


@click.group(epilog=EXAMPLES, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mmcloak")
def main() -> None:
    """Detectors behind one contract: trained, scored, and attacked with cloaking, FGM, PGD and a search."""


@main.command("models")
def list_models() -> None:
    """List the detectors: name, what it is, and whether it takes embedding-space attacks."""
    from . import victim_class, victim_names

    for name in victim_names():  # each class says what it is and whether it is differentiable
        cls = victim_class(name)
        click.echo(f"{name:12} {cls.summary_of(name)}{'  [differentiable: FGM / PGD]' if cls.differentiable else ''}")


# What `attacks train` passes on as a victim's settings: a flag naming a field of the victim's Training says how
# it is trained, any other what it is (see _settings).
SETTINGS_OPTIONS = (
    click.option("--backbone", default=None, metavar="NAME|DIR",
                 help="bert / chinesebert / mmbert: the encoder to start from (any transformers encoder; a folder)."),
    click.option("--backbone-layers", type=click.IntRange(1), default=None, metavar="N",
                 help="bert / chinesebert / mmbert: keep the backbone's first N layers [all]."),
    click.option("--vectors", default=None, metavar="FILE", help="emb-*: word vectors, word2vec text format."),
    click.option("--grid", is_flag=True, default=None,
                 help="Conventional: Wankmüller (2021)'s 5-fold CV grid on macro-F1."),
    click.option("--oversample", is_flag=True, default=None,
                 help="Conventional: minority classes to 1/4 of the majority."),
    click.option("--seed", type=click.IntRange(0), default=None, help="Seed of the training [default: 0]."),
    click.option("--preset", type=click.Choice(["habertor", "vqf", "vaqf", "vafqf", "vafoqf"]), default=None,
                 help="habertor without --backbone: which factorisations [default: vafoqf]."),
    click.option("--adv", type=click.Choice(list(ADVERSARIES)), default=None,
                 help=f"habertor: adversarial training [default: {DEFAULT_ADVERSARY}]."),
    click.option("--source-field", default=None, metavar="FIELD",
                 help="habertor: the record field naming a post's source (one net of heads per source)."),
    click.option("--head", type=click.Choice(list(HEADS)), default=None,
                 help="bert, chinesebert: a linear head on [CLS], or GAttention over the last layer "
                      f"[default: {DEFAULT_HEAD}]."),
    click.option("--gattention-heads", type=click.IntRange(1), default=None,
                 help="--head gattention: heads [default: 1]."),
    click.option("--regularizer", type=click.Choice(list(REGULARIZERS)), default=None,
                 help="bert, chinesebert, habertor: attention regularisation (EAR entropy, KLAR toward lexicon "
                      "terms)."),
    click.option("--alpha", "regularizer_alpha", type=click.FloatRange(0), default=None,
                 help="The regulariser's weight [default: " + ", ".join(
                     f"{name.upper()} {r.alpha}" for name, r in REGULARIZERS.items() if r.reads_attentions) + "]."),
    click.option("--klar-share", type=click.FloatRange(0, 1), default=None,
                 help="KLAR: the attention share of the relevant tokens [default: 0.4]."),
    click.option("--relevant", default=None, metavar="FILE",
                 help="KLAR: the lexicon whose terms are the relevant tokens (term per line) "
                      "[default: the default lexicon]."),
)

DEFENCE_HELP = ("cloak unveil in front of the detector, as an Unveiler spec: unveil, or unveil:KEY=VALUE... with the "
                "options of `cloak unveil` (unveil:targets=lexicon+mined:mine_from=train.jsonl:threshold=4).")


def _settings_options(func):
    for option in reversed(SETTINGS_OPTIONS):
        func = option(func)
    return func


@main.command()
@click.option("--model", "name", required=True, metavar="NAME", help="A detector: `attacks models` lists them.")
@click.option("--train", "train_path", required=True, metavar="FILE", help="Labelled training records (JSONL).")
@click.option("--dev", "dev_path", default=None, metavar="FILE",
              help="Labelled dev records: picks a torch victim's best epoch (else a share of --train is held out); "
                   "scored for every victim.")
@click.option("--out", "out_dir", required=True, metavar="DIR",
              help="Where the victim is saved (victim.json + weights).")
@click.option("--config", "config_path", default=None, metavar="YAML",
              help="Settings: {config: {...}, training: {...}} (`attacks models` names the kinds).")
@_settings_options
@click.option("--defence", default=None, metavar="SPEC",
              help=DEFENCE_HELP + " The detector is trained on the training posts read back, as it will read "
                                  "every post it is asked about.")
@click.option("--resume", is_flag=True, help="Continue an interrupted run from its checkpoint in OUT (torch victims "
                                             "keep one; without --resume a rerun starts over).")
@click.option("--overwrite", is_flag=True, help="Replace a victim already saved in OUT.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@_errors_reported
def train(name, train_path, dev_path, out_dir, config_path, defence, resume, overwrite, quiet, **flags) -> None:
    """Train a detector and save it as a victim."""
    check_files([path for path in (train_path, dev_path, config_path, flags["relevant"]) if path])
    config, training = _settings(config_path, name, **flags)
    from . import make_victim
    from .victims.base import training_data

    victim = make_victim(name, config, training)
    if defence:
        from .victims.defended import defend

        victim = defend(victim, defence)
        victim.unveiler.prepare()  # its terms mined now: a defence that cannot be built is refused before --out
    check_victim_out(out_dir, overwrite, resume)
    train_records = _labelled(train_path)
    dev_records = _labelled(dev_path) if dev_path else None
    if victim.differentiable:
        _quiet_libraries()
    started = time.perf_counter()
    victim.fit(train_records, dev_records, out_dir=out_dir, resume=resume, progress=False if quiet else None)
    seconds = time.perf_counter() - started
    victim.trained_on = {"train": training_data(train_records, train_path),
                         **({"dev": training_data(dev_records, dev_path)} if dev_records else {})}
    victim.save(out_dir)
    report = {"victim": victim.name, "train": train_path, "train_records": len(train_records),
              "seconds": round(seconds, 1), **victim.fit_results()}
    line = f"{victim.name}: trained on {plural(len(train_records), 'post')} in {seconds:.1f} s"
    line += _check_trained(victim, report, train_records, dev_records, dev_path)
    write_atomic(os.path.join(out_dir, "training.json"),
                 (json.dumps(report, indent=1, ensure_ascii=False) + "\n").encode())
    click.echo(f"{line} (victim in {out_dir})", err=True)
    if "warning" in report:
        click.echo(f"attacks: warning: {victim.name} is useless as trained: {report['warning']}; its figures under "
                   "attack will mean nothing (check the labels, the data's balance, or train longer)", err=True)


def _check_trained(victim, report: dict, train_records: list[dict], dev_records: list[dict] | None,
                   dev_path: str | None) -> str:
    """Score a victim just trained on its dev posts (else on training posts), into ``report``: its figures on
    dev, and a warning where it is useless (a detector that says one label for everything "loses nothing" to
    every attack: say so now). Returns what the command's line adds (the dev figures)."""
    from mmbert.metrics import useless_reason

    from .evaluate import resolve_label_names
    from .metrics import detection_metrics, prediction_counts

    checked, where = (dev_records, "dev posts") if dev_records else (train_records[:CHECKED], "training posts")
    probs = victim.predict_proba([r["text"] for r in checked])
    figures = detection_metrics([r["label"] for r in checked], probs)
    warning = useless_reason(figures["f1"], len(checked), prediction_counts(probs), where,
                             resolve_label_names(checked))
    if warning:
        report["warning"] = warning
    if not dev_records:
        return ""
    report.update(dev=dev_path, dev_figures=figures)
    return f"; dev macro-F1 {figures['f1']:.4f}, accuracy {figures['accuracy']:.4f}, AUC {figures['auc']:.4f}"


CHECKED = 1000  # training posts a victim without dev posts is checked on for a useless model


def check_victim_out(out_dir: str, overwrite: bool, resume: bool) -> None:
    """Refuse to train into a file, or over a saved victim without ``--overwrite`` (it would be gone, and an
    evaluation of the old one would no longer match its folder)."""
    from .victims.base import VICTIM_FILE

    check_out_folder("--out", out_dir)
    saved = os.path.join(out_dir, VICTIM_FILE)
    if os.path.isfile(saved) and not overwrite and not resume:
        try:
            with open(saved, encoding="utf-8") as f:
                kind = json.load(f).get("name", "a")
        except (OSError, ValueError):
            kind = "a"
        raise ValueError(f"--out {out_dir}: holds a saved {kind} victim; pass --overwrite to replace it, or give "
                         "another --out folder")
    if overwrite and os.path.isfile(saved):
        os.remove(saved)  # until the new one is saved, the folder is no finished victim


@main.command("pretrain-habertor")
@click.option("--corpus", "corpus_paths", required=True, multiple=True, metavar="FILE",
              help="Texts: JSONL records (their `text`) or plain lines; repeat for several files.")
@click.option("--out", "out_dir", required=True, metavar="DIR",
              help="config.json, weights and tokenizer: a --backbone for `attacks train --model habertor`.")
@click.option("--preset", type=click.Choice(["habertor", "vqf", "vaqf", "vafqf", "vafoqf"]), default="vafoqf",
              show_default=True, help="Which of vocabulary, attention, feed-forward, output are factorised.")
@click.option("--config", "config_path", default=None, metavar="YAML",
              help="{model: {sizes...}, training: {vocab_size, tau, epochs, lr, batch_size, max_length, ...}}.")
@click.option("--tau", type=click.IntRange(1), default=None,
              help="Masking factor: copies of each text an epoch [default: 10].")
@click.option("--epochs", type=click.IntRange(1), default=None, help="Epochs [default: 5].")
@click.option("--vocab-size", type=click.IntRange(8), default=None, help="SentencePiece vocabulary [default: 40000].")
@click.option("--seed", type=click.IntRange(0), default=None, help="Seed [default: 0].")
@click.option("--resume", is_flag=True, help="Continue an interrupted run from OUT/checkpoint (without it a rerun "
                                             "starts over).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@_errors_reported
def pretrain_habertor_command(corpus_paths, out_dir, preset, config_path, tau, epochs, vocab_size, seed, resume,
                              quiet) -> None:
    """Pre-train HABERTOR by masked LM on a domain corpus, with a SentencePiece vocabulary trained on it."""
    check_files([*corpus_paths, *([config_path] if config_path else [])])
    sections = _yaml_sections(config_path, "model", "training")
    from mmbert.pretrain import read_corpus

    texts = [t for path in corpus_paths for t in read_corpus(path)]
    from .nn.habertor_model import HabertorConfig
    from .victims.habertor import HabertorPretraining, pretrain_habertor

    _quiet_libraries()
    model = HabertorConfig.preset(preset, **(sections.get("model") or {}))
    flags = {"tau": tau, "epochs": epochs, "vocab_size": vocab_size, "seed": seed}
    settings = HabertorPretraining.from_dict({**(sections.get("training") or {}),
                                              **{k: v for k, v in flags.items() if v is not None}}, "training")
    started = time.perf_counter()
    result = pretrain_habertor(texts, out_dir, model, settings, resume=resume, progress=False if quiet else None)
    result["seconds"] = round(time.perf_counter() - started, 1)
    write_atomic(f"{out_dir}/pretrain_log.json", (json.dumps(result, indent=1) + "\n").encode())
    click.echo(f"habertor: pre-trained on {len(texts)} texts in {result['seconds']:.1f} s, vocabulary "
               f"{result['vocab_size']}; best epoch {result['best_epoch']}, held-out masked-LM loss "
               f"{result['best_mlm_loss']:.4f} (in {out_dir})", err=True)


@main.command()
@click.option("--victim", "victim_dir", required=True, metavar="DIR", help="A saved victim (or an MMBERT folder).")
@click.option("--in", "in_path", required=True, metavar="FILE", help="Records to score (JSONL).")
@click.option("--out", "out_path", required=True, metavar="FILE",
              help="Each record plus victim: {name, probs, label}.")
@click.option("--batch-size", type=click.IntRange(1), default=256, show_default=True,
              help="Posts scored at a time.")
@click.option("--gates", is_flag=True, help="GAttention victims: each token's gate z per head, in `victim.gates`.")
@click.option("-q", "--quiet", is_flag=True, help="No lines but errors (what is scored, and how many).")
@_errors_reported
def predict(victim_dir, in_path, out_path, batch_size, gates, quiet) -> None:
    """Score records with a saved victim."""
    check_files([in_path], [out_path])
    from cloak.common.io import AtomicWriter

    from . import inspect_victim

    folder = inspect_victim(victim_dir)

    def records():  # each label one the victim knows: another would be scored as if it were
        numbered = read_records(in_path, unique_ids=True)
        return known_labels(numbered, folder.num_labels, in_path, f"victim {folder.facts['name']}")

    if in_path != "-":  # the whole file, before the victim loads (standard input is checked as it is read)
        for _ in records():
            pass
    _quiet_libraries()
    victim = folder.loaded()
    if gates and not victim.has_gates:
        raise ValueError(f"{victim_dir}: --gates needs a victim with a GAttention head (attacks train --head "
                         f"gattention); this is {victim.name}")
    if not quiet:
        click.echo(f"predict: {victim.name} ({victim.settings_text()})", err=True)
    n = 0
    with AtomicWriter(out_path) as out:
        for block in batched((r for _, r in records()), batch_size):
            texts = [r["text"] for r in block]
            probs = victim.predict_records(block)  # HABERTOR reads each post's source too
            token_gates = victim.gates(texts) if gates else [None] * len(block)
            for record, p, token_gate in zip(block, probs, token_gates):
                answered = not np.isnan(p).any()  # an LLM answer that names no label has no probabilities
                entry = {"name": victim.name, "probs": [round(float(x), 6) for x in p] if answered else None,
                         "label": int(p.argmax()) if answered else -1}
                if token_gate is not None:
                    entry["gates"] = token_gate
                out.write(dump_record({**record, "victim": entry}))
                n += 1
    if not quiet:
        click.echo(f"predict: {plural(n, 'record')} scored by {victim.name} into {out_path}", err=True)


@main.command()
@click.option("--model", "name", required=True, metavar="NAME", help="A detector: `attacks models` lists them.")
@click.option("--train", "train_path", required=True, metavar="FILE", help="Labelled training records to sample from.")
@click.option("--test", "test_path", required=True, metavar="FILE", help="Labelled test records.")
@click.option("--out", "out_dir", required=True, metavar="DIR", help="runs.jsonl, curve.json and curve.png.")
@click.option("--sizes", default="500,1000,2000,5000,10000", show_default=True, metavar="N,N,...",
              help="Training sizes, each a sample holding the smaller ones.")
@click.option("--repeats", type=click.IntRange(1), default=5, show_default=True,
              help="Runs at each size, each on another sample.")
@click.option("--backbone", default=None, metavar="NAME|DIR",
              help="bert / chinesebert / mmbert: the encoder to start from.")
@click.option("--vectors", default=None, metavar="FILE", help="emb-*: word vectors, word2vec text format.")
@click.option("--config", "config_path", default=None, metavar="YAML",
              help="Settings: {config: {...}, training: {...}}, as for `attacks train`.")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True, help="Seed of the samples and runs.")
@click.option("--resume", is_flag=True, expose_value=False,
              help="Continue an interrupted run: what rerunning the same command does anyway (the runs finished in "
                   "OUT/runs.jsonl are kept).")
@_errors_reported
def curve(name, train_path, test_path, out_dir, sizes, repeats, backbone, vectors, config_path, seed) -> None:
    """Wankmüller (2021)'s curve: macro-F1 against training size, nested subsamples, repeated."""
    check_files([train_path, test_path, *([config_path] if config_path else [])])
    try:
        size_list = sorted({int(s) for s in sizes.split(",") if s.strip()})
    except ValueError:
        raise ValueError(f"--sizes must be whole numbers separated by commas, not {sizes!r}") from None
    if not size_list or size_list[0] < 2:
        raise ValueError("--sizes must be at least 2 posts each")
    train_records, test_records = _labelled(train_path), _labelled(test_path)
    config, training = _settings(config_path, name, backbone=backbone, vectors=vectors)
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


class EvaluateCommand(click.Command):
    """``attacks evaluate``: its own options, with those of every attack's options dataclass after
    ``--attacks``, made when its parameters are read (so that an attack registered after this module loaded
    has its options too)."""

    @property
    def params(self) -> list[click.Parameter]:
        classes = tuple(options_classes())
        if classes != self.made_for:  # one list while the attacks stay: click appends to it and pops
            own, self.made_for = self.own_params, classes
            at = next(i for i, p in enumerate(own) if p.name == "attack_names") + 1
            self.made = [*own[:at], *_attack_options(classes), *own[at:]]
        return self.made

    @params.setter
    def params(self, params: list[click.Parameter]) -> None:
        self.own_params, self.made_for = params, None


@functools.cache
def _attack_options(classes: tuple[type, ...]) -> list[click.Option]:
    return dataclass_options(classes)


@main.command(cls=EvaluateCommand)
@click.option("--victim", "victim_dirs", required=True, multiple=True, metavar="DIR",
              help="A saved victim (repeat for several); named by its folder.")
@click.option("--data", "data_path", required=True, metavar="FILE", help="Labelled records to attack (JSONL).")
@click.option("--out", "out_dir", required=True, metavar="DIR", help="Outcomes per (victim, attack) and summary.json.")
@click.option("--attacks", "attack_names", default="cloak", show_default=True, metavar="fgm,pgd,cloak,search",
              help="Which attacks: FGM and PGD on input embeddings (differentiable victims), cloaking, the search.")
@click.option("--limit", type=click.IntRange(1), default=None, metavar="N", help="The first N records only.")
@click.option("--shard", default=None, metavar="i/n",
              help="Attack the i-th of n contiguous blocks of the records (`attacks merge` joins the shards).")
@ray_options("this process", "its actors run shards of the posts")
@click.option("--workers", type=click.IntRange(1), default=None, metavar="N",
              help="--engine ray: actors, each loading the victims once [default: one per CPU of the cluster, or one "
                   "per GPU for torch victims on a cluster with GPUs].")
@click.option("--batch-size", type=click.IntRange(1), default=64, show_default=True,
              help="Posts attacked at a time; outcomes are written a batch at a time (what a kill can lose).")
@click.option("--label-names", default=None, metavar="0=NAME,1=NAME",
              help="What each label is called in the summary and report [default: the records' label_name, else "
                   "0=non-offensive,1=offensive].")
@click.option("--defence", default=None, metavar="SPEC",
              help=DEFENCE_HELP + " Each victim is evaluated as it is and with the defence in front, as NAME+unveil: "
                                  "the search then attacks the defence too (an adaptive attack).")
@click.option("--resume", is_flag=True, expose_value=False,
              help="Continue an interrupted run: what rerunning the same command does anyway (the outcomes finished "
                   "in OUT are kept, the rest attacked).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@_errors_reported
def evaluate(victim_dirs, data_path, out_dir, attack_names, limit, shard, engine, address, workers, batch_size,
             label_names, defence, quiet, **attack_options) -> None:
    """Attack every victim with every attack; per-post outcomes and summary.json in OUT (resumable)."""
    from cloak.run import parse_shard

    kinds = {k.strip(): attack_kind(k.strip()).options for k in attack_names.split(",") if k.strip()}
    check_files([data_path, *(attack_options[f.name] for cls in kinds.values() if cls for f in dataclasses.fields(cls)
                              if f.metadata.get("file") and attack_options.get(f.name))])
    shard, names = parse_shard(shard), _label_names(label_names)
    if engine == "ray" and shard:
        raise ValueError("--shard is for one machine's part: --engine ray cuts and merges the shards itself")
    if engine != "ray" and (address or workers):
        raise ValueError("--address and --workers are for --engine ray")
    victims, records = _checked_victims(victim_dirs, data_path, limit)
    saved = dict(zip(victims, victim_dirs))  # for Ray's actors, which load the victims (and defend them) again
    if defence:
        from cloak.unveil import Unveiler

        from .victims.defended import defended_folders

        defence = Unveiler.from_spec(defence)  # its terms mined once, now: Ray's actors read with it too
        victims.update(defended_folders(victims, defence))
    attacks = [attack for kind, cls in kinds.items() for attack in make_attacks(kind, cls and cls(**{
        f.name: attack_options[f.name] for f in dataclasses.fields(cls) if f.name in attack_options}), records)]
    _quiet_libraries()
    from .evaluate import data_info
    from .evaluate import evaluate as run_evaluation

    data, progress = {**data_info(data_path), "limit": limit}, False if quiet else None
    if engine == "ray":
        from .ray_engine import evaluate_on_ray

        summary = evaluate_on_ray(saved, records, attacks, out_dir, data=data, defence=defence,
                                  batch_size=batch_size, label_names=names, workers=workers, address=address,
                                  progress=progress)
    else:
        summary = run_evaluation(victims, records, attacks, out_dir, data=data, shard=shard, batch_size=batch_size,
                                 label_names=names, progress=progress)
    _print_summary(summary, out_dir)


def _checked_victims(victim_dirs: tuple[str, ...], data_path: str, limit: int | None) -> tuple[dict, list[dict]]:
    """The victims by folder name, each checked (and every record's label against it) before anything is
    written, and the records to attack."""
    from .evaluate import first_unknown_label
    from .victims.base import inspect_victim

    folders = [os.path.basename(os.path.normpath(d)) for d in victim_dirs]
    if len(set(folders)) < len(folders):
        raise ValueError(f"--victim: two folders share a name ({', '.join(folders)}); outcomes are kept by folder name")
    numbered = list(read_records(data_path, labels=True))[:limit]
    victims = {name: inspect_victim(d) for name, d in zip(folders, victim_dirs)}
    records = [r for _, r in numbered]
    for name, victim in victims.items():
        bad = first_unknown_label(records, victim.num_labels)
        if bad is not None:
            raise RecordError(data_path, numbered[bad][0], f"{records[bad]['label']}, but victim {name} knows labels "
                              + ", ".join(map(str, range(victim.num_labels))), "label")
    return victims, records


def _label_names(text: str | None) -> dict[int, str] | None:
    """``0=non-offensive,1=offensive`` -> {0: "non-offensive", 1: "offensive"}."""
    if not text:
        return None
    names = {}
    for part in text.split(","):
        label, sep, name = part.partition("=")
        if not sep or not label.strip().isdigit() or not name.strip():
            raise ValueError(f"--label-names: {part.strip()!r} is not LABEL=NAME (e.g. 0=non-offensive,1=offensive)")
        names[int(label)] = name.strip()
    return names


@main.command()
@click.argument("shard_dirs", nargs=-1, required=True, metavar="SHARD_DIR...")
@click.option("--out", "out_dir", required=True, metavar="DIR", help="The joined outcomes and their summary.json.")
@_errors_reported
def merge(shard_dirs, out_dir) -> None:
    """Join the folders of `attacks evaluate --shard 0/n ... n-1/n` into one, as one run would have written it."""
    from .evaluate import merge as merge_shards

    _print_summary(merge_shards(shard_dirs, out_dir), out_dir)


@main.command()
@click.argument("results_dirs", nargs=-1, required=True, metavar="RESULTS_DIR...")
@click.option("--out", "out_dir", required=True, metavar="DIR", help="report.json, report.md and report.html.")
@click.option("--label", "labels", multiple=True, metavar="NAME",
              help="A name per RESULTS_DIR, in order, for its rows [default: the folder's name].")
@click.option("--curve", "curves", multiple=True, metavar="DIR", help="An `attacks curve` folder to plot.")
@click.option("--routing", "routing", multiple=True, metavar="DIR",
              help="An `mmbert routing` folder to plot (for an MMBERT victim).")
@click.option("--examples", type=click.IntRange(0), default=3, show_default=True,
              help="Adversarial examples shown per victim.")
@click.option("--label-names", default=None, metavar="0=NAME,1=NAME",
              help="What each label is called [default: as `attacks evaluate` recorded: the data's, or "
                   "0=non-offensive,1=offensive].")
@_errors_reported
def report(results_dirs, out_dir, labels, curves, routing, examples, label_names) -> None:
    """The robustness report of `attacks evaluate` folders: report.json, report.md and an offline report.html."""
    from .report import build_report, load_results, terminal_matrix, write_report

    if labels and len(labels) != len(results_dirs):
        raise ValueError(f"--label: {len(labels)} given for {len(results_dirs)} results folders; give one each")
    results = [load_results(d, label) for d, label in zip(results_dirs, labels or [None] * len(results_dirs))]
    built = build_report(results, curves=curves, routing=routing, examples=examples,
                         label_names=_label_names(label_names))
    paths = write_report(built, out_dir)
    click.echo("Macro-F1, clean and its change under each attack:")
    click.echo(terminal_matrix(built), nl=False)
    click.echo(f"report: {paths['html']} (and report.md, report.json)")


def _print_summary(summary: dict, out_dir: str) -> None:
    # as wide as the longest name: a defended victim's (tfidf-lr+cloaks+unveil), a search's with its goal and method
    wide = max([16, *map(len, summary["victims"])])
    attack_wide = max([28, *(len(a) for entry in summary["victims"].values() for a in entry["attacks"])])
    click.echo(f"{'victim':<{wide}} {'attack':<{attack_wide}} {'macro-F1 clean -> attacked':>27} "
               f"{'drop, 95% interval':>24} {'success':>8}  {'posts changed, of offensive':<27}", err=True)
    for name, entry in summary["victims"].items():
        for attack, figures in _grouped(summary, entry):
            if isinstance(figures, str):
                click.echo(figures, err=True)
                continue
            if "skipped" in figures:
                click.echo(f"{name:<{wide}} {attack:<{attack_wide}} skipped: {figures['skipped']}", err=True)
                continue
            rate = figures["textattack"]["success_rate"]
            low, high = figures["drop_interval"]["f1"]
            interval = f"{figures['drop']['f1']:.4f} [{low:.3f}, {high:.3f}]"
            click.echo(f"{name:<{wide}} {attack:<{attack_wide}} {entry['clean']['f1']:>17.4f} -> "
                       f"{figures['all']['f1']:.4f} "
                       f"{interval:>24} {'' if rate is None else f'{rate:.1%}':>8}  {_coverage_text(figures)}",
                       err=True)
    click.echo(f"evaluate: {os.path.join(os.path.normpath(out_dir), 'summary.json')}", err=True)


def _grouped(summary: dict, entry: dict) -> list[tuple[str, dict | str]]:
    """A victim's (attack, figures), for a victim behind ``cloak unveil`` the cloak attacks by foreign ops apart
    after a line saying so (str figures): the project's own cloaks are read back by the tables that made them,
    which flatters the defence, and the report leaves them out of its averages for that victim."""
    from .cloaking import foreign_attack

    attacks = list(entry["attacks"].items())
    if not (entry.get("facts") or {}).get("defence"):
        return attacks
    foreign = [(a, f) for a, f in attacks if foreign_attack(summary["attacks"][a])]
    if not foreign:
        return attacks
    return ([x for x in attacks if x not in foreign]
            + [("", "  from other sources (foreign ops, made by none of the tables cloak unveil reads with; the "
                    "report judges this defended victim by these):")] + foreign)


def _coverage_text(figures: dict) -> str:
    """``3,234/5,323 (60.8%), 1,713/2,107 (81.3%)``: the posts an attack changed, of all and of the offensive ones;
    ``barely applied`` under 5% (left out of the report's averages)."""
    c = figures.get("coverage")
    if c is None:  # a summary written before coverage was recorded
        return ""
    text = (f"{c['changed']:,}/{c['posts']:,} ({c['share']:.1%}), "
            f"{c['offensive_changed']:,}/{c['offensive_posts']:,} ({c['offensive_share']:.1%})")
    return text + (", barely applied" if figures.get("barely_applied") else "")


if __name__ == "__main__":
    main()
