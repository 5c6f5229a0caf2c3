"""The ``cloak`` command: a thin shell over the ``cloak`` API."""
from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import inspect
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from types import ModuleType

import click
from click.core import ParameterSource

from .convert import FORMATS, convert_file
from .edits import apply_edits
from .common.commands import dataclass_options, fail, plural, reports_errors, target_options
from .common.io import ON_ERROR, check_files, read_records
from .mining import mines, refuse_unused_mine_from
from .ops import available_ops, cloakable, make_op
from .ops.base import STRENGTHS
from .perturber import Perturber
from .rng import Rng
from .show import show_records
from .targets import default_lexicon
from .unveil import Unveiler
from .unveil.ngram import DICTIONARY, MIN_COUNT, ORDER

EXAMPLES = """
\b
Examples:
  cloak convert --from cold --in test.csv --out cold_test.jsonl
  cloak perturb --in cold_test.jsonl --out cloaked.jsonl --ops homophone,emoji --variants 2
  cloak mine-terms --train cold_train.jsonl --out terms.tsv
  cloak perturb --in cold_test.jsonl --out cloaked.jsonl --lexicon terms.tsv --strength poster
  cloak show cloaked.jsonl --limit 10
  cloak unveil --in cloaked.jsonl --out unveiled.jsonl --lexicon terms.tsv
  cloak fit-lm --train cold_train.jsonl --out cold.lm
"""


def _kept(kwargs: dict) -> str:
    """What an interrupted ``cloak perturb`` kept, and how to go on."""
    out = kwargs["out_path"]
    return f"; what is done is kept in {out}.partial: rerun with --resume" if out != "-" else ""


# cloak's own commands say an error as it says itself (an OS error's "[Errno 2] ...", a plugin's import error)
_errors_reported = reports_errors("cloak", failures={OSError: "", ImportError: ""},
                                  interrupted={"perturb": _kept, "unveil": _kept,
                                                               "convert": "; nothing was written"})


def import_plugin(name: str) -> ModuleType:
    """Import a plugin module by name (found in the current folder too, as ``python -m`` would) or
    by the path of its ``.py`` file."""
    if name.endswith(".py"):
        if not os.path.isfile(name):
            raise ImportError(f"plugin file not found: {name}")
        spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(name))[0], name)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    if os.getcwd() not in sys.path:  # an installed command's path does not have it
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        raise ImportError(f"cannot import plugin {name!r}: {e}") from None


class _Workers(click.ParamType):
    """A worker count: ``auto`` (None: the run chooses) or an integer >= 1."""

    name = "N|auto"

    def convert(self, value, param, ctx):
        if value is None or value == "auto":
            return None
        try:
            number = int(value)
        except (TypeError, ValueError):
            number = 0
        if number < 1:
            self.fail(f"{value!r} is neither auto nor an integer >= 1", param, ctx)
        return number


WORKERS = _Workers()


def ray_options(local: str, ray: str) -> Callable:
    """``--engine local|ray`` and ``--address`` for a command that also runs on a Ray cluster: ``local``
    says where it runs without, ``ray`` what changes with it."""
    def options(command: Callable) -> Callable:
        command = click.option("--address", default=None, metavar="ADDR", help=(
            "--engine ray: the cluster's address (HOST:PORT of `ray start --head`) [default: RAY_ADDRESS, a "
            "cluster started on this machine, or a new local one]."))(command)
        return click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                            help=f"Where to run: {local}, or a Ray cluster (pip install 'mmcloak[ray]'; {ray}). "
                                 "The output is the same.")(command)
    return options


# The record files cloak perturb and cloak unveil read and write (cloak.common.formats)
RECORDS_IN = ("JSONL ({\"text\": ...} per line), CSV (FILE.csv) or TSV (FILE.tsv) with a header row, Parquet "
              "(FILE.parquet) or a saved Hugging Face Dataset (the folder Dataset.save_to_disk wrote); - for "
              "standard input (JSONL).")
RECORDS_OUT = ("Output records, in the format the path says: JSONL, CSV (FILE.csv) or TSV (FILE.tsv; a column a "
               "field, cloak and unveil as JSON in their cells), Parquet (FILE.parquet) or a saved Hugging Face "
               "Dataset (a folder: DIR/, or one that holds a saved Dataset); written as JSONL to FILE.partial and "
               "turned into it when complete. - for stdout (JSONL). Parquet and Datasets need pip install "
               "'mmcloak[hf]'.")


def run_options(plugin_help: str) -> Callable:
    """The options of a command that transforms a file record by record through ``cloak.run`` (``cloak
    perturb``, ``cloak unveil``): workers, shard, engine, errors, resume, text field, plugins, quiet."""
    def options(command: Callable) -> Callable:
        for option in reversed([
            click.option("--workers", type=WORKERS, default="auto", show_default=True, metavar="N|auto",
                         help="Worker processes; auto: one per CPU (one for short inputs). The output is "
                              "identical for any number."),
            click.option("--shard", default=None, metavar="i/n",
                         help="Process only the i-th of n contiguous blocks of lines (0-based); shards "
                              "concatenated in order equal the unsharded output."),
            ray_options("this machine's processes",
                        "--workers then counts Ray actors, auto: one per CPU of the cluster"),
            click.option("--on-error", type=click.Choice(ON_ERROR), default="fail", show_default=True,
                         help="On a bad line: stop with an error naming it, or skip it and count it."),
            click.option("--resume", is_flag=True,
                         help="Continue an interrupted run from FILE.partial instead of starting over."),
            click.option("--overwrite", is_flag=True,
                         help="Start over, throwing away what an interrupted run left in FILE.partial."),
            click.option("--text-field", default="text", show_default=True, help="Field holding the text."),
            click.option("--plugin", "plugins", multiple=True, metavar="MODULE|FILE.py",
                         help=f"Import MODULE (or FILE.py) first, e.g. one that registers {plugin_help}."),
            click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary line.")]):
            command = option(command)
        return command
    return options


def run_command(name: str, transform, in_path: str, out_path: str, *, workers, shard, engine, address, on_error,
                resume, overwrite, text_field, modules, quiet) -> None:
    """Run ``transform`` over a file as ``cloak NAME`` does (locally or on Ray), ending with its summary line."""
    from .run import run_file

    started = time.perf_counter()
    if address and engine != "ray":
        raise ValueError("--address is for --engine ray")
    runner = None
    if engine == "ray":
        from .ray import RayEngine

        runner = RayEngine(address, workers, plugins=modules)
    else:
        transform.prepare()  # here, once: the local workers inherit the tables
    setup = time.perf_counter() - started
    stats = run_file(in_path, out_path, transform, workers=workers, shard=shard, on_error=on_error, resume=resume,
                     overwrite=overwrite, text_field=text_field, progress=False if quiet else None, engine=runner,
                     desc=f"cloak {name}")
    stats.setup_seconds = setup
    if not quiet:
        click.echo(f"cloak {name}: {stats.summary()}", err=True)
        for example in stats.skipped.examples:
            click.echo(f"  skipped {example}", err=True)


class _Commands(click.Group):
    """cloak's own commands, and those of the packages built on it (``render``, ``speech``), which
    register under the entry-point group ``mmcloak.cloak_commands``: cloak never imports them itself,
    and loads one only when it is asked for (``cloak perturb`` does not pay for numpy and Pillow)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_plugin_entries()})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        entry = _plugin_entries().get(name)
        if command is None and entry is not None:
            try:
                command = entry.load()
            except ImportError as e:  # an optional extra that is not installed
                command = _missing(name, e)
            self.add_command(command, name)
        return command


@functools.cache
def _plugin_entries() -> dict:
    from importlib.metadata import entry_points

    return {entry.name: entry for entry in entry_points(group="mmcloak.cloak_commands")}


@click.group(cls=_Commands, epilog=EXAMPLES, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mmcloak")
def main() -> None:
    """Synthesise cloaked Chinese text the way posters write it (homophones, split characters,
    pinyin, English, emoji ...), with a record of every edit."""


@main.command()
@click.option("--in", "in_path", required=True, metavar="FILE|DIR|-", help=f"Input records: {RECORDS_IN}")
@click.option("--out", "out_path", required=True, metavar="FILE|DIR/|-", help=RECORDS_OUT)
@click.option("--ops", default="homophone", show_default=True, metavar="OPS",
              help="Comma-separated ops, each NAME[:param=value...], e.g. homophone:tone=fuzzy,emoji. "
                   "Each target is cloaked by one of them, tried in random order. See `cloak ops`.")
@target_options(mine_default="--in")
@click.option("--strength", type=click.Choice(STRENGTHS), default="op", show_default=True,
              help="How much of each target: each op's own parameters (op), every character of the term "
                   "(whole), or that with rarer same-sound characters, as posters write (poster).")
@click.option("--rate", type=click.FloatRange(0, 1), default=None,
              help="Probability that a target is cloaked [default: 1.0 for lexicon, 0.3 for all].")
@click.option("--variants", type=click.IntRange(1), default=1, show_default=True,
              help="Cloaked copies written per record (cloak.variant tells them apart).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed; with the line number and variant it fixes every choice.")
@click.option("--balance/--no-balance", default=True, show_default=True,
              help="With mined targets: add the words that mark the non-offensive posts; these are then cloaked as "
                   "often and as heavily as the offensive ones, and a cloak does not carry the label to a "
                   "detector trained on the cloaks; or the offensive posts' words alone (what attacks cloak).")
@click.option("--protect", default=None, metavar="REGEX",
              help="Extra spans never to touch (URLs, @mentions, #topics# and [emoticons] always are). "
                   "Records may also carry \"protected\": [[start, end], ...].")
@run_options("your own ops")
@_errors_reported
def perturb(in_path, out_path, ops, targets, lexicon, mine_from, strength, rate, variants, seed, balance, protect,
            workers, shard, engine, address, on_error, resume, overwrite, text_field, plugins, quiet) -> None:
    """Cloak each record's text and write the cloaked records.

    Every output record keeps all input fields, replaces `text`, and adds `source_text` and
    `cloak` = {ops, seed, variant, edits: [{op, start, end, src, dst}]} (start/end index
    source_text), enough to replay or invert the change. Ends with a one-line summary on stderr.
    """
    modules = [import_plugin(module) for module in plugins]
    from .run import Cloaking
    from .targets import DEFAULT_PROTECT

    pattern = DEFAULT_PROTECT + (f"|{protect}" if protect else "")
    refuse_unused_mine_from(targets, mine_from)
    mine_from = mine_from or in_path
    if mines(targets) and mine_from == "-":
        raise ValueError(f"--targets {targets} reads its records twice (to mine, then to cloak): give a file, "
                         "or --mine-from FILE")
    perturber = Perturber(ops=ops, targets=targets, lexicon=lexicon, mine_from=mine_from, rate=rate, seed=seed,
                          protect=pattern, strength=strength, balance=balance)
    run_command("perturb", Cloaking(perturber, variants), in_path, out_path, workers=workers, shard=shard,
                engine=engine, address=address, on_error=on_error, resume=resume, overwrite=overwrite,
                text_field=text_field, modules=modules, quiet=quiet)


@main.command()
@click.option("--in", "in_path", required=True, metavar="FILE|DIR|-",
              help=f"Input records, cloaked or not: {RECORDS_IN}")
@click.option("--out", "out_path", required=True, metavar="FILE|DIR/|-", help=RECORDS_OUT)
@click.option("--settings", "spec", default=None, metavar="SPEC",
              help="All of the above as one string, unveil:families=sound+shape:threshold=2 (what an unveiled "
                   "record's unveil.settings holds); options given beside it override it.")
@run_options("your own scorer")
@click.pass_context
@_errors_reported
def unveil(ctx, in_path, out_path, spec, workers, shard, engine, address, on_error, resume, overwrite, text_field,
           plugins, quiet, **settings) -> None:
    """Read cloaks back: each record's text with its homophones, pinyin, split characters, look-alikes,
    emoji, traditional forms, noise ... restored where the context supports it.

    Every output record keeps all input fields, replaces `text`, and adds `unveiled_from` (the text as
    read) and `unveil` = {ops, settings, edits: [{op, start, end, src, dst}]} (start/end index
    unveiled_from). Ends with a one-line summary on stderr.
    """
    modules = [import_plugin(module) for module in plugins]
    from .unveil.records import Unveiling

    given = {k: v for k, v in settings.items() if ctx.get_parameter_source(k) is not ParameterSource.DEFAULT}
    check_files([v for k, v in given.items() if v and next(f for f in dataclasses.fields(Unveiler)
                                                            if f.name == k).metadata.get("file")])
    unveiler = dataclasses.replace(Unveiler.from_spec(spec, "--settings"), **given) if spec else Unveiler(**given)
    run_command("unveil", Unveiling(unveiler), in_path, out_path, workers=workers, shard=shard, engine=engine,
                address=address, on_error=on_error, resume=resume, overwrite=overwrite, text_field=text_field,
                modules=modules, quiet=quiet)


unveil.params[2:2] = dataclass_options([Unveiler])  # after --in and --out: the Unveiler's parameters


@main.command("fit-lm")
@click.option("--train", "train_path", required=True, metavar="FILE",
              help="Clean posts (JSONL records) to fit on: the kind of text cloaks are read back in.")
@click.option("--out", "out_path", required=True, metavar="FILE", help="The model (a gzip TSV): give it to "
              "`cloak unveil --model`.")
@click.option("--order", type=click.IntRange(1, 8), default=ORDER, show_default=True, help="Characters an n-gram spans.")
@click.option("--min-count", type=click.IntRange(1), default=MIN_COUNT, show_default=True,
              help="N-grams seen fewer times are left out (a smaller file; 1 keeps them all: on COLD, 1.5 points "
                   "more homophone cloaks read back at five times the memory, 678 MB against 134).")
@click.option("--dictionary", type=click.IntRange(0), default=DICTIONARY, show_default=True, metavar="F",
              help="Also fit on the words of jieba's dictionary this frequent (0: none): which characters make "
                   "words beyond what the posts hold.")
@click.option("--text-field", default="text", show_default=True, help="Field holding the text.")
@_errors_reported
def fit_lm(train_path, out_path, order, min_count, dictionary, text_field) -> None:
    """Fit the character n-gram model `cloak unveil` weighs candidates with (interpolated Kneser-Ney)."""
    from .unveil.ngram import CharNgramLM, dictionary_words

    check_files([train_path], [out_path])
    texts = [r[text_field] for _, r in read_records(train_path, text_field=text_field)]
    lm = CharNgramLM.fit(texts, order=order, min_count=min_count, words=dictionary_words(dictionary))
    lm.save(out_path)
    click.echo(f"cloak fit-lm: {plural(len(lm.logprob_), 'n-gram')} of up to {order} characters from "
               f"{plural(len(texts), 'post')}{f' and jieba words of frequency {dictionary}+' if dictionary else ''} "
               f"-> {out_path}", err=True)


@main.command("mine-terms")
@click.option("--train", "train_path", required=True, metavar="FILE",
              help="Labelled records (JSONL): label 0 not offensive, any other offensive.")
@click.option("--out", "out_path", required=True, metavar="FILE",
              help="The terms, a TSV lexicon (term, category, z, offensive_posts, other_posts): give it to "
                   "--lexicon or --targets lexicon:FILE.")
@click.option("--z", "z", type=click.FloatRange(0), default=2.0, show_default=True,
              help="Keep terms whose weighted log-odds z-score reaches this (2: p < 0.023, one-sided).")
@click.option("--min-count", type=click.IntRange(1), default=5, show_default=True,
              help="Keep terms that at least this many offensive posts hold.")
@click.option("--no-lexicon", is_flag=True, help="Write the mined terms only, not the default lexicon's too.")
@_errors_reported
def mine_terms_command(train_path, out_path, z, min_count, no_lexicon) -> None:
    """Mine the terms most associated with the offensive label (weighted log-odds with an informative
    Dirichlet prior, Monroe et al. 2008): the targets posters would cloak."""
    from .mining import mine_terms, write_terms

    check_files([train_path], [out_path])
    records = [r for _, r in read_records(train_path, labels=True)]
    mined = mine_terms(records, z=z, min_count=min_count)
    base = None if no_lexicon else default_lexicon()
    n = write_terms(out_path, mined, base)
    offensive = [r["text"] for r in records if r["label"] != 0]
    reach = _reach(offensive, [m.term for m in mined] + (base.terms if base else []))
    line = (f"cloak mine-terms: {plural(len(mined), 'term')} mined from {plural(len(records), 'post')} "
            f"({len(offensive)} offensive)")
    if base:
        line += f", with the default lexicon's {len(base)}: {plural(n, 'term')}"
        line += f"; they reach {reach:.1%} of the offensive posts (the lexicon alone {_reach(offensive, base.terms):.1%})"
    click.echo(f"{line} -> {out_path}", err=True)


def _reach(texts: list[str], terms: list[str]) -> float:
    """The share of ``texts`` holding at least one of ``terms``."""
    from .targets import Lexicon

    lexicon = Lexicon(terms) if terms else None
    return sum(bool(lexicon and lexicon.find(t)) for t in texts) / max(1, len(texts))


@main.command()
@click.option("--from", "fmt", type=click.Choice(FORMATS), required=True, help="Input format.")
@click.option("--in", "in_path", required=True, metavar="FILE", help="Data set file.")
@click.option("--out", "out_path", required=True, metavar="FILE|-", help="Output JSONL records.")
@click.option("--text-col", default="text", show_default=True, help="Text column (csv / tsv).")
@click.option("--label-col", default="label", show_default=True,
              help="Label column (csv / tsv); empty for unlabelled data.")
@click.option("--id-col", default=None, help="Id column (csv / tsv) [default: row number].")
@_errors_reported
def convert(fmt, in_path, out_path, text_col, label_col, id_col) -> None:
    """Turn a public data set (COLD, SWSR, ToxiCN, ToxiCloakCN, CNTP, any CSV/TSV) into records
    {"id", "text", "label", ...}."""
    options = {}
    if fmt in ("csv", "tsv"):
        options = {"text_col": text_col, "label_col": label_col or None, "id_col": id_col}
    n = convert_file(fmt, in_path, out_path, **options)
    click.echo(f"cloak convert: wrote {plural(n, 'record')} to {out_path}", err=True)


@main.command()
@click.argument("path", metavar="FILE|-")
@click.option("--limit", "-n", type=click.IntRange(1), default=20, show_default=True,
              help="Records to show.")
@click.option("--all", "show_all", is_flag=True, help="Show unchanged records too.")
@_errors_reported
def show(path, limit, show_all) -> None:
    """Show cloaked records: each source with what was replaced, and its cloak."""
    records = (r for _, r in read_records(path))
    shown = show_records(records, limit=limit, only_changed=not show_all)
    if not shown:
        click.echo("no cloaked records to show", err=True)


EXAMPLE_SEEDS = 100


@main.command("ops")
@click.option("--coverage/--no-coverage", default=True, show_default=True,
              help="Count the target terms each op can cloak (builds every op's tables once).")
@target_options()
@_errors_reported
def list_ops(coverage: bool, targets: str, lexicon: str | None, mine_from: str | None) -> None:
    """List the perturbation ops: what each does, its parameters, an example of each style, and how
    many of the target terms (the default lexicon's, or --targets / --lexicon) it can cloak."""
    chosen = _target_terms(targets, lexicon, mine_from) if coverage else None
    for name, cls in sorted(available_ops().items()):
        params = ", ".join(f"{f.name}={f.default!r}" for f in dataclasses.fields(cls)) or "no parameters"
        summary = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ")
        click.echo(f"{name:12} {summary}")
        click.echo(f"{'':12} parameters: {params}")
        if cls.foreign:  # cloak unveil's tables make none of its cloaks: what judges a defended detector
            click.echo(f"{'':12} from other sources: {cls.source}")
        if chosen:
            found = len(cloakable(make_op(name), chosen.terms))
            click.echo(f"{'':12} {chosen.name}: cloaks {found} of {len(chosen.terms)} terms")
        for params, word in cls.examples:
            spec = f"{name}:{params}" if params else name
            op = make_op(spec)
            # the three commonest outputs over some seeds: a default mix shows what it mostly makes
            outputs = Counter(apply_edits(word, op.edit_span(word, 0, len(word), Rng(seed)))
                              for seed in range(EXAMPLE_SEEDS))
            click.echo(f"{'':12} {spec:36} {word} -> {', '.join(o for o, _ in outputs.most_common(3))}")


def _target_terms(spec: str, lexicon: str | None, mine_from: str | None):
    """The ``Lexicon`` that ``--targets`` / ``--lexicon`` / ``--mine-from`` choose: terms to count."""
    from .mining import build_targets
    from .targets import Lexicon

    refuse_unused_mine_from(spec, mine_from)
    chosen = build_targets(spec, lexicon=lexicon, labelled=mine_from)
    if not isinstance(chosen, Lexicon):
        raise ValueError(f"--targets {spec} is every word, no terms to count: give lexicon, mined or lexicon+mined")
    return chosen


def _missing(name: str, error: ImportError) -> click.Command:
    @click.command(name, help=f"(unavailable: {error})", context_settings={"ignore_unknown_options": True})
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def command(args) -> None:
        fail("cloak", f"`cloak {name}` needs an optional dependency: {error}. Install mmcloak[all].")
    return command


if __name__ == "__main__":
    main()
